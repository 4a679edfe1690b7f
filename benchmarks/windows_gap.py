"""Stratus against Fleet and oracle Stratus on windows of the Google 2011 trace, and why
(issue 36, item 1). Each window is loaded once and replayed under each scheduler with the
audit logs on; ``windows_gap_analysis`` turns each replay into its breakdown. Writes one
JSON document (every number) and a markdown file of tables.

    python benchmarks/windows_gap.py --out-json gap.json --out-md gap.md
    python benchmarks/windows_gap.py --windows 14400:4 --schedulers stratus,stratus-oracle

Windows are START_S:HOURS, cut by the google2011 loader (``window_start_s``,
``window_hours``: whole jobs only, Stratus §4.2), as in the issue's table. Replays run one
at a time, in this process.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from windows_gap_analysis import CAUSES, analyse  # noqa: E402

TRACE = "/work/shared/data/google-2011"
# eight four-hour windows over the trace's 19.65 hours (the five among them),
# and the 19-hour one
WINDOWS = "600:4,7200:4,14400:4,21600:4,28800:4,36000:4,43200:4,54000:4,600:19"
SCHEDULERS = "stratus,fleet,stratus-oracle"


def window_format(start: float, hours: float) -> str:
    return f"google2011?window_start_s={start:g}&window_hours={hours:g}"


def replay_recorded(spec, fitted, history, warmup_h):
    """``stratus.app.runs.replay_one`` with the engine's audit logs kept (``record``)."""
    from stratus.app.registry import get_spec
    from stratus.app.runs import estimator_name, fitted_estimator, replay_config
    from stratus.sim.engine import Engine
    from stratus.sim.markets import check_trace_spot_window

    sched = get_spec(spec.scheduler)
    cfg = replay_config(spec)
    cfg.record = True
    if spec.market == "spot":
        check_trace_spot_window(cfg.prices, fitted, spec.spot_start)
    est = fitted_estimator(estimator_name(spec, sched), spec.seed, history)
    cfg.estimator = est
    res = Engine(fitted, sched.factory(), cfg).run()
    if est.learns_online and warmup_h is not None:
        res.summary["estimator_warmup_hours"] = round(max(0.0, warmup_h), 4)
    return res, cfg.catalog


def full_history(spec, trace: str, start: float, hours: float):
    """The warm-up history cut from the whole trace (format ``google2011`` without a
    window): the jobs that ran to completion in the ``hours`` before ``start``. The
    format's own window holds only the window's jobs, so its history is empty."""
    from stratus.traces.spec import TraceSource

    hist = TraceSource(trace, "google2011", spec.seed, spec.trace_cache()).history(start, hours)
    return lambda: hist


def run_window(trace: str, start: float, hours: float, schedulers: list[str], seed: int,
               options: dict, warm_full: bool = False) -> dict:
    from stratus.app import spec as S
    from stratus.app.api import _window

    base = {"trace": trace, "format": window_format(start, hours), "seed": seed, **options}
    spec = S.ReplaySpec.build({**base, "scheduler": schedulers[0]})
    fitted, history, warmup_h = _window(spec, trace)
    if warm_full:
        history = full_history(spec, trace, start, warmup_h)
    out = {"start_s": start, "hours": hours, "format": base["format"],
           "warmup_from": "full trace" if warm_full else "window format", "runs": {}}
    for name in schedulers:
        spec = S.ReplaySpec.build({**base, "scheduler": name})
        t0 = time.perf_counter()
        res, catalog = replay_recorded(spec, fitted, history, warmup_h)
        run = analyse(res, fitted, catalog)
        run["wall_seconds"] = round(time.perf_counter() - t0, 1)
        out["runs"][name] = run
        print(f"  {start:>7g} s {hours:g} h {name:<16} ${run['summary']['total_cost_usd']:,.1f}"
              f"  ({run['wall_seconds']} s)", file=sys.stderr, flush=True)
        del res
    return out


# --- markdown ------------------------------------------------------------------------------
def _money(x) -> str:
    return "-" if x is None else f"{x:,.1f}"


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _cost(w, name):
    r = w["runs"].get(name)
    return r["summary"]["total_cost_usd"] if r else None


def headline(doc: dict) -> list[str]:
    names = doc["schedulers"]
    head = ["window (start s, h)", *(f"{n} $" for n in names)]
    if {"stratus", "stratus-oracle"} <= set(names):
        head.append("stratus − oracle $")
    if {"stratus", "fleet"} <= set(names):
        head.append("stratus − fleet $")
    head += ["warm-up h / jobs",
             "est. error over jobs: median abs ln(est/act) (jobs), within ×2"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for w in doc["windows"]:
        cells = [f"{w['start_s']:g}, {w['hours']:g}"]
        costs = {n: _cost(w, n) for n in names}
        best = min((c for c in costs.values() if c is not None), default=None)
        cells += [f"**{_money(c)}**" if c == best else _money(c) for c in costs.values()]
        if "stratus-oracle" in costs and "stratus" in costs:
            cells.append(f"{costs['stratus'] - costs['stratus-oracle']:+,.1f}")
        if "fleet" in costs and "stratus" in costs:
            cells.append(f"{costs['stratus'] - costs['fleet']:+,.1f}")
        s = w["runs"].get("stratus", {}).get("summary", {})
        e = s.get("estimator_error") or {}
        cells.append(f"{s.get('estimator_warmup_hours', '-')} / "
                     f"{s.get('estimator_warmup_jobs', '-')}")
        cells.append(f"{e.get('median_abs_log_ratio', '-')} ({e.get('jobs', '-')}), "
                     f"{_pct(e.get('within_factor_2'))}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def causes_table(doc: dict) -> list[str]:
    names = doc["schedulers"]
    head = ["window", "scheduler", "total $", *(f"{c} $" for c in CAUSES)]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for w in doc["windows"]:
        for n in names:
            r = w["runs"][n]
            b = r["bill_by_cause_usd"]
            lines.append(f"| {w['start_s']:g}, {w['hours']:g} | {n} | "
                         f"{_money(r['summary']['total_cost_usd'])} | "
                         + " | ".join(_money(b[c]) for c in CAUSES) + " |")
        for other in ("stratus-oracle", "fleet"):
            if "stratus" in names and other in names:
                a, b = w["runs"]["stratus"], w["runs"][other]
                d = [a["bill_by_cause_usd"][c] - b["bill_by_cause_usd"][c] for c in CAUSES]
                tot = a["summary"]["total_cost_usd"] - b["summary"]["total_cost_usd"]
                lines.append(f"| | *stratus − {other}* | *{tot:+,.1f}* | "
                             + " | ".join(f"*{x:+,.1f}*" for x in d) + " |")
    return lines


def attribution_table(doc: dict) -> list[str]:
    """Per window, stratus's bill minus oracle stratus's and minus fleet's, by cause."""
    names = doc["schedulers"]
    if not {"stratus", "stratus-oracle", "fleet"} <= set(names):
        return []
    head = ["window", "stratus − oracle $", "low tails past estimate $", "packing idle Δ $",
            "spin-up Δ $", "held Δ $", "other low Δ $", "stratus − fleet $",
            "packing idle Δ $", "other low Δ $", "spin-up Δ $", "held Δ $"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for w in doc["windows"]:
        s, o, f = (w["runs"][n] for n in ("stratus", "stratus-oracle", "fleet"))

        def d(a, b, k):
            return f"{a['bill_by_cause_usd'][k] - b['bill_by_cause_usd'][k]:+,.1f}"

        def gap(a, b):
            return f"{a['summary']['total_cost_usd'] - b['summary']['total_cost_usd']:+,.1f}"

        lines.append(" | ".join([
            f"| {w['start_s']:g}, {w['hours']:g}", gap(s, o),
            f"{s['bill_by_cause_usd']['low_overrun']:,.1f}", d(s, o, "packing"),
            d(s, o, "spinup"), d(s, o, "used"), d(s, o, "low_within"), gap(s, f),
            d(s, f, "packing"), d(s, f, "low_within"), d(s, f, "spinup"),
            d(s, f, "used")]) + " |")
    return lines


def estimate_table(doc: dict) -> list[str]:
    head = ["window", "tasks in a lower bin (vCPU-s share)", "in a higher bin (vCPU-s)",
            "job-mean estimate: lower / higher (lower, vCPU-s)", "stratus migrations (past estimate)",
            "oracle migrations", "stratus cleared (all / some / none past estimate)",
            "oracle cleared"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for w in doc["windows"]:
        s = w["runs"].get("stratus")
        o = w["runs"].get("stratus-oracle")
        if not s or "estimate_error" not in s:
            continue
        a = s["estimate_error"]["all"]
        m = s["migrations"]
        om = f"{o['migrations']['migrations']:,}" if o else "-"
        oc = f"{o['summary'].get('instances_cleared') or 0:,}" if o else "-"
        c = s.get("cleared", {})
        sc = (f"{s['summary'].get('instances_cleared') or 0:,} ({c.get('all_past_estimate', '-')}"
              f" / {c.get('some_past_estimate', '-')} / {c.get('none_past_estimate', '-')})")
        lines.append(
            f"| {w['start_s']:g}, {w['hours']:g} | {_pct(a['placed_lower'])} "
            f"({_pct(a['weight_lower'])}) | {_pct(a['placed_higher'])} "
            f"({_pct(a['weight_higher'])}) | {_pct(a.get('jobmean_lower'))} / "
            f"{_pct(a.get('jobmean_higher'))} ({_pct(a.get('jobmean_weight_lower'))}) | "
            f"{m['migrations']:,} ({m['past_estimate']:,}) | "
            f"{om} | {sc} | {oc} |")
    return lines


def bins_table(w: dict) -> list[str]:
    s = w["runs"].get("stratus")
    if not s or "estimate_error" not in s:
        return []
    head = ["true runtime", "tasks", "vCPU-s share", "est/actual p10, median, p90",
            "placed lower", "placed higher", "lower (vCPU-s)", "job-mean lower / higher"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for b in s["estimate_error"]["bins"]:
        lines.append(f"| {b['range']} | {b['tasks']:,} | {_pct(b['weight_share'])} | "
                     f"{b['ratio_p10']:.2g}, {b['ratio_median']:.2g}, {b['ratio_p90']:.2g} | "
                     f"{_pct(b['placed_lower'])} | {_pct(b['placed_higher'])} | "
                     f"{_pct(b['weight_lower'])} | {_pct(b.get('jobmean_lower'))} / "
                     f"{_pct(b.get('jobmean_higher'))} |")
    return lines


def hours_table(doc: dict) -> list[str]:
    """Per window, the share of stratus's vCPU-seconds placed in too low a bin by hour of
    submission (the estimator learning as the window goes)."""
    wins = [w for w in doc["windows"]
            if "by_hour" in w["runs"].get("stratus", {}).get("estimate_error", {})]
    if not wins:
        return []
    n = max(len(w["runs"]["stratus"]["estimate_error"]["by_hour"]) for w in wins)
    head = ["window", *(f"hour {h}" for h in range(n))]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for w in wins:
        hrs = {r["hour"]: r for r in w["runs"]["stratus"]["estimate_error"]["by_hour"]}
        lines.append(f"| {w['start_s']:g}, {w['hours']:g} | " + " | ".join(
            _pct(hrs[h]["weight_lower"]) if h in hrs else "-" for h in range(n)) + " |")
    return lines


def markdown(doc: dict) -> str:
    out = [f"<!-- written by benchmarks/windows_gap.py: {doc['command']} -->", "",
           "### Bills per window", "", *headline(doc), "",
           "### Stratus's gap by cause (dollars)", "", *attribution_table(doc), "",
           "### The bill by cause (dollars)", "", *causes_table(doc), "",
           "### Estimates, bins and migrations (stratus)", "", *estimate_table(doc), ""]
    hrs = hours_table(doc)
    if hrs:
        out += ["### vCPU-seconds placed in too low a bin, by hour of submission (stratus)",
                "", *hrs, ""]
    for w in doc["windows"]:
        rows = bins_table(w)
        if rows:
            out += [f"### Estimate error by runtime bin, window {w['start_s']:g} s, "
                    f"{w['hours']:g} h", "", *rows, ""]
    return "\n".join(out)


def parse_windows(text: str) -> list[tuple[float, float]]:
    out = []
    for part in text.split(","):
        try:
            s, h = part.split(":")
            out.append((float(s), float(h)))
        except ValueError:
            raise SystemExit(f"windows_gap: --windows {part!r}: give START_S:HOURS") from None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=TRACE)
    ap.add_argument("--windows", default=WINDOWS, help="START_S:HOURS,... (default: %(default)s)")
    ap.add_argument("--schedulers", default=SCHEDULERS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--estimator", default=None,
                    help="--estimator for every replay (default: each scheduler's own)")
    ap.add_argument("--warmup-from-full", action="store_true",
                    help="warm a learning estimator up on the jobs before the window in the "
                    "whole trace (the window format's own history is empty)")
    ap.add_argument("--out-json", type=Path,
                    help="write every number here (required unless --from-json)")
    ap.add_argument("--from-json", type=Path,
                    help="no replays: write --out-md from an earlier --out-json")
    ap.add_argument("--out-md", type=Path)
    args = ap.parse_args(argv)
    if args.from_json:
        if not args.out_md:
            ap.error("--from-json needs --out-md")
        args.out_md.write_text(markdown(json.loads(args.from_json.read_text())))
        return 0
    if not args.out_json:
        ap.error("--out-json is required")
    schedulers = [s for s in args.schedulers.split(",") if s]
    options = {"estimator": args.estimator} if args.estimator else {}
    doc = {"command": "python benchmarks/windows_gap.py " + " ".join(
        sys.argv[1:] if argv is None else argv), "trace": args.trace, "seed": args.seed,
        "schedulers": schedulers, "windows": []}
    for start, hours in parse_windows(args.windows):
        doc["windows"].append(run_window(args.trace, start, hours, schedulers, args.seed,
                                         options, args.warmup_from_full))
        args.out_json.write_text(json.dumps(doc, indent=1))  # what is done so far
    if args.out_md:
        args.out_md.write_text(markdown(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
