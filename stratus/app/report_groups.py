"""Which result rows a report may pool. Rows are comparable when they differ only in what a
figure compares (scheduler, market, policy, reserved servers, the estimate error h) or
pairs windows by (slice, seed); everything else in a cell's spec (hours, start, tick,
catalog, the trace and its content) must be equal. Rows under one trace label that are
not comparable are split into groups of their own, each labelled by what sets it apart,
and a note says so: a report never averages a 1-hour run with a 2-hour one, or normalizes
one trace's cost by another's."""

from __future__ import annotations

import json
import math

#: what a figure may vary or pair by, per command (``estimator`` too where h is set)
AXES = {"replay": {"scheduler", "market", "slice", "seed"},
        "waiting": {"policy", "reserved", "slice", "seed"}}
#: options that are axes when written in a grid (``h`` is the estimator noisy:h)
OPTION_AXES = {"scheduler", "market", "policy", "reserved", "h"}


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def setting(row: dict) -> dict:
    """What must be equal for ``row`` to be pooled with another: its canonical spec and
    input hashes without the figure's axes. A row from before rows carried their spec
    (results format 2) is known by its trace columns and options."""
    command = row.get("command")
    spec = row.get("spec_json")
    h = not _missing(row.get("opt_h"))
    if isinstance(spec, str) and spec not in ("null", ""):
        axes = AXES.get(command, set()) | ({"estimator"} if h else set())
        out = {k: v for k, v in json.loads(spec).items() if k not in axes}
        for k, v in (json.loads(row.get("inputs_json") or "null") or {}).items():
            out[f"{k} content"] = v
        return out
    out = {k: (None if _missing(row.get(k)) else row.get(k))
           for k in ("trace", "format", "hours", "start", "slices")}
    opts = json.loads(row.get("options_json") or "{}")
    out.update({k: v for k, v in opts.items() if k not in OPTION_AXES})
    return out


def _show(v) -> str:
    text = json.dumps(v, default=str) if not isinstance(v, str) else v
    return text if len(text) <= 40 else text[:37] + "..."


def comparable(df):
    """``df`` with each ``trace_label`` narrowed to one comparable setting, and the notes
    that say which labels were split and why."""
    if df.empty:
        return df, []
    df = df.copy()
    df["trace_group"] = df["trace_label"]  # the label as written, before any split
    rows = df.to_dict("records")
    keys = [json.dumps(setting(r), sort_keys=True, default=str) for r in rows]
    labels = list(df["trace_label"])
    notes = []
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault((r.get("command"), r["trace_label"]), []).append(i)
    for (command, label), idx in groups.items():
        distinct = list(dict.fromkeys(keys[i] for i in idx))
        if len(distinct) < 2:
            continue
        sets = [json.loads(k) for k in distinct]
        names = sorted({k for s in sets for k in s})
        differ = [k for k in names if len({json.dumps(s.get(k), sort_keys=True, default=str)
                                          for s in sets}) > 1]
        # a file's content is news only where its name is the same
        differ = [k for k in differ if not (k.endswith(" content") and k[:-8] in differ)]
        named = {k: f"{label} [{', '.join(f'{d}={_show(s.get(d))}' for d in differ)}]"
                 for k, s in zip(distinct, sets)}
        for i in idx:
            labels[i] = named[keys[i]]
        notes.append(f"{label} ({command}): its rows differ in {', '.join(differ)}, so they "
                     f"are not pooled; shown as {len(distinct)} separate groups: "
                     + "; ".join(named.values()))
    df["trace_label"] = labels
    return df, notes


WINDOW = ("trace", "format", "hours", "start", "slices")


def window_key(row: dict) -> str:
    """The trace window a row ran on (its spec's window and the trace file's content),
    whatever its command: what rows of a replay and of a waiting sweep must share to be
    drawn on one figure."""
    spec = row.get("spec_json")
    spec = json.loads(spec) if isinstance(spec, str) and spec not in ("null", "") else {}
    inputs = json.loads(row.get("inputs_json") or "null") or {}
    return json.dumps({**{k: spec.get(k, row.get(k)) for k in WINDOW},
                       "content": inputs.get("trace")}, sort_keys=True, default=str)
