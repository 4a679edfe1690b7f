"""Alibaba GPU cluster trace 2023 ("openb", Weng et al., ATC '23): ``--format alibaba-gpu2023``.

Input: one pod list (``openb_pod_list_default.csv``, ``..._gpushare100.csv`` or
``..._multigpu50.csv``) or the folder holding them (then ``pods=default|gpushare100|
multigpu50`` picks the file, default ``default``). The folder's README gives the columns:
``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time`` (times in seconds from the trace's origin; empty = none).

Mapping, one pod = one single-task job:
    job_id = the number in the pod's name (openb-pod-0042 -> 42; names are unique);
    submit_s = creation_time (trace seconds, not shifted); runtime_s = deletion_time -
    scheduled_time (the time the pod held its node); cpu = cpu_milli / 1000; mem_gib =
    memory_mib / 1024; gpus = num_gpu x gpu_milli / 1000 with ``gpu=share`` (a 0.47 share
    asks 470 of the engine's thousandths of a GPU, so two such pods share one GPU), or the
    whole GPUs it occupies (``num_gpu``: a 0.47 share rents a whole GPU, as EC2 sells them)
    with ``gpu=whole`` (the default). The engine pools an instance's GPUs in thousandths
    and does not assign shares to devices (docs/decisions.md, "GPUs in thousandths").
    queue = qos (LS, BE, Burstable, Guaranteed); job_name = the pod's shape (qos, cpu, memory, GPUs), the
    closest the trace has to "the same program again"; user "unknown"; priority 0 (the
    trace has none: an unknown column). ``gpu_spec`` (allowed GPU models; empty in every
    row of these files) is not used: a catalog type has one GPU model.

Pods, in this order, each counted once in the load report under the first reason:
    * Pending: never scheduled (no scheduled_time), never ran: always dropped.
    * Failed: kept unless ``phases=`` leaves them out (``phases=Running,Succeeded``):
      they held a node until deleted. Kept pods are counted by phase in a note.
    * censored: a Running pod whose deletion_time is the file's last time was still alive
      when the trace was cut; its runtime is a lower bound. Kept (``censored=keep``, it
      runs to the trace's end) or dropped (``censored=drop``); counted in a note either way.
    * the window: pods created before its start, or deleted after its end, are dropped
      (whole jobs only, Stratus §4.2), unless ``early=clip``: a pod created before the
      start and still running at it then arrives at the start with its remaining time.

The default window starts where the load does: at the file's first deletion. Before it
the trace holds only pods still alive then (default file: 33 of 8,152 pods over 115
days, 32 Running; the other 8,119 arrive in the last 34 days), so a replay from 0 would
rent for 115 nearly empty days. ``window_start_s=0`` replays the whole file (one pod runs
145 days); ``window_end_s`` or ``window_hours`` end it earlier. The window is in the
trace's meta (``loader_window``) and ``stratus traces describe`` prints it.

``multigpu50`` has only ``name,cpu_milli,memory_mib,num_gpu,gpu_milli``: no phase and no
times, so no arrival and no runtime. It is refused with a line naming the missing columns,
unless ``batch_runtime_s=SECONDS`` is given: then every pod is submitted at 0 and runs
that long (a packing study, as the FGD paper's own simulator reads these files: its
inputs carry no times).

A value that is not what the README says a column holds (not a whole number, negative,
a gpu_milli outside 0-1000 or fractional with 2+ GPUs, an unknown phase or QoS, a
scheduled_time missing on a pod that ran or before its creation, a deletion before its
scheduling) is a TraceError "FILE:LINE: column 'X': ..." (exit 2).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from stratus.base.errors import ConfigError, TraceError
from stratus.traces.schema import LoadReport, Trace
from stratus.traces.tables import (
    Table,
    check_options,
    drop_blank,
    numbers,
    option_choice,
    option_float,
    option_text,
    read_csv_table,
    strings,
)

FORMAT = "alibaba-gpu2023"
FILES = {"default": "openb_pod_list_default.csv",
         "gpushare100": "openb_pod_list_gpushare100.csv",
         "multigpu50": "openb_pod_list_multigpu50.csv"}
NODE_FILE = "openb_node_list_all_node.csv"
RESOURCES = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TIMED = ("qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time")
PHASES = ("Running", "Succeeded", "Failed", "Pending")
QOS = ("LS", "BE", "Burstable", "Guaranteed")
OPTION_NAMES = ("pods", "phases", "gpu", "censored", "early", "window_start_s",
                "window_end_s", "window_hours", "batch_runtime_s")
GPU_MODES = {"whole": "whole", "share": "share"}
CENSORED = {"keep": True, "drop": False}
EARLY = {"drop": False, "clip": True}
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*?-(\d+)$")


class Options(NamedTuple):
    """Checked options; the window in microseconds (as ``traces.spec.format_window`` reads)."""

    pods: str = "default"
    phases: frozenset = frozenset({"Running", "Succeeded", "Failed"})
    gpu: str = "whole"
    keep_censored: bool = True
    clip_early: bool = False
    start_us: int | None = None  # None: where the load starts (the first deletion)
    end_us: int | None = None  # None: the trace's end
    batch_runtime_s: float | None = None


def parse_options(options: dict) -> Options:
    """Convert option strings; ConfigError names the bad option."""
    check_options(FORMAT, options, OPTION_NAMES)
    pods, _ = option_choice(FORMAT, options, "pods", dict.fromkeys(FILES), "default")
    phases = _phases(options)
    gpu, _ = option_choice(FORMAT, options, "gpu", GPU_MODES, "whole")
    _, keep_censored = option_choice(FORMAT, options, "censored", CENSORED, "keep")
    _, clip = option_choice(FORMAT, options, "early", EARLY, "drop")
    start = option_float(FORMAT, options, "window_start_s", None)
    hours = option_float(FORMAT, options, "window_hours", None, inclusive=False)
    end = option_float(FORMAT, options, "window_end_s", None)
    if hours is not None and end is not None:
        raise ConfigError(f"format {FORMAT!r}: give window_hours or window_end_s, not both")
    if hours is not None:
        if start is None:
            raise ConfigError(f"format {FORMAT!r}: window_hours needs window_start_s (the "
                              "default start is found in the file)")
        end = start + hours * 3600.0
    if end is not None and start is not None and end <= start:
        raise ConfigError(f"format {FORMAT!r}: option window_end_s={end:g} must be after "
                          f"window_start_s={start:g}")
    batch = option_float(FORMAT, options, "batch_runtime_s", None, inclusive=False)
    return Options(pods, phases, gpu, keep_censored, clip,
                   None if start is None else int(round(start * 1e6)),
                   None if end is None else int(round(end * 1e6)), batch)


def _phases(options: dict) -> frozenset:
    text = option_text(FORMAT, options, "phases", None)
    if text is None:
        return Options().phases
    by_lower = {p.lower(): p for p in PHASES}
    out = set()
    for word in (w.strip() for w in text.split(",")):
        phase = by_lower.get(word.lower())
        if phase is None:
            raise ConfigError(f"format {FORMAT!r}: option 'phases' takes Running, Succeeded "
                              f"and Failed, got {word!r}")
        if phase == "Pending":
            raise ConfigError(f"format {FORMAT!r}: option 'phases': Pending pods never ran "
                              "(no scheduled_time), so they have no runtime to keep")
        out.add(phase)
    return frozenset(out)


def pod_file(path: Path, pods: str) -> Path:
    """The pod list to read: ``path`` itself, or the ``pods`` file in a folder."""
    path = Path(path)
    if path.is_dir():
        f = path / FILES[pods]
        if not f.exists():
            raise TraceError(f"{path}: no {FILES[pods]} in this folder (pods={pods})")
        return f
    if path.name == NODE_FILE:
        raise TraceError(f"{path}: this is the node list; the format reads a pod list "
                         f"({', '.join(FILES.values())}) or their folder")
    return path


def input_files(path: Path, **options) -> list[tuple[str, Path]]:
    """The file the load reads (traces/cache.py keys its entry on it)."""
    f = pod_file(path, parse_options(options).pods)
    return [(f.name, f)]


def load(path: Path, **options) -> Trace:
    """Read an openb pod list as a Trace; see the module docstring."""
    path = Path(path)
    opts = parse_options(options)
    f = pod_file(path, opts.pods)
    table = read_csv_table(f, ("name", "gpu_spec", "qos", "pod_phase"))
    table.require(RESOURCES)
    report = LoadReport(table.source, rows_read=len(table.frame))
    drop_blank(table, report)
    timed = [c for c in TIMED if c in table.frame.columns]
    if not timed and opts.batch_runtime_s is None:
        raise TraceError(f"{table.source}: no {', '.join(TIMED)} columns (this pod list, like "
                         "multigpu50, gives resources only): no arrival and no runtime to "
                         "replay; pass batch_runtime_s=SECONDS to submit every pod at 0 "
                         "with that runtime")
    if timed:
        table.require(TIMED, "time")
        if opts.batch_runtime_s is not None:
            raise ConfigError(f"format {FORMAT!r}: option 'batch_runtime_s' is for a pod "
                              f"list without times; {table.source} has them")
    extra = [c for c in table.frame.columns if c not in (*RESOURCES, *TIMED, "gpu_spec")]
    if extra:
        report.note(f"ignored columns: {', '.join(extra)}")
    if len(table.frame) == 0:  # a header and no row (a cut file): nothing to span a window
        raise TraceError(f"{table.source}: the pod list holds no pods")
    pods = _resources(table, opts)
    if timed:
        frame, window = _timed(table, pods, opts, report)
    else:
        frame, window = _batch(pods, opts.batch_runtime_s, opts.gpu, report)
    if frame.empty:
        dropped = "; ".join(f"{n:,} {why}" for why, n in report.dropped.items()) or "no rows"
        raise TraceError(f"{table.source}: no pods left ({dropped})")
    meta = {"path": str(path), "format": FORMAT, "pods_file": f.name,
            "options": {k: str(v) for k, v in options.items()},
            "unknown_columns": ["priority"], "loader_window": window,
            "load_report": report.as_dict()}
    return Trace(frame, name=f.name, meta=meta)


# --- columns ----------------------------------------------------------------------------


def _whole(table: Table, column: str) -> np.ndarray:
    v = numbers(table, column, integer=True)
    neg = v < 0
    if neg.any():
        raise table.error(int(np.flatnonzero(neg)[0]), column, f"must be >= 0, got "
                          f"{v[neg][0]:g}")
    return v


def _resources(table: Table, opts: Options) -> pd.DataFrame:
    """Per pod: id, cpu, GiB, GPUs (as the ``gpu`` option counts them) and the shape."""
    names = strings(table, "name", empty_ok=False)
    ids = np.empty(len(names), dtype=np.int64)
    for i, n in enumerate(names):
        m = NAME_RE.match(n)
        if m is None:
            raise table.error(i, "name", f"expected a pod name ending in -NUMBER "
                              f"(openb-pod-0042), got {n[:40]!r}")
        ids[i] = int(m.group(1))
    order = np.argsort(ids, kind="stable")
    same = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if same.size:
        k = min(same.tolist(), key=lambda k: order[k + 1])
        first, second = sorted((order[k], order[k + 1]))
        raise table.error(int(second), "name", f"pod number {ids[second]} already used on "
                          f"{table.place(table.frame.index[first])}")
    cpu = _whole(table, "cpu_milli")
    mem = _whole(table, "memory_mib")
    ngpu = _whole(table, "num_gpu")
    milli = _whole(table, "gpu_milli")
    checks = [
        (milli > 1000, "gpu_milli is a share of one GPU in thousandths: at most 1000"),
        ((ngpu > 0) & (milli == 0), "gpu_milli is 0 but num_gpu > 0"),
        ((ngpu == 0) & (milli > 0), "gpu_milli > 0 but num_gpu is 0"),
        ((ngpu >= 2) & (milli != 1000), "only a 1-GPU pod can ask for a share (gpu_milli "
                                         "< 1000) of its GPU"),
        ((cpu == 0) & (mem == 0), "the pod requests no CPU and no memory"),
    ]
    for bad, why in checks:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            col = "cpu_milli" if why.startswith("the pod") else "gpu_milli"
            raise table.error(i, col, f"{why} (num_gpu {ngpu[i]:g}, gpu_milli {milli[i]:g})")
    share = ngpu * milli / 1000.0
    gpus = share if opts.gpu == "share" else ngpu
    qos = (strings(table, "qos") if "qos" in table.frame.columns
           else np.full(len(names), "", dtype=object))
    shape = [f"{q or 'pod'}-c{c:g}-m{m:g}-g{g:g}x{s:g}"
             for q, c, m, g, s in zip(qos, cpu, mem, ngpu, milli)]
    return pd.DataFrame({"job_id": ids, "cpu": cpu / 1000.0, "mem_gib": mem / 1024.0,
                         "gpus": gpus.astype(np.float64), "share": share, "qos": qos,
                         "job_name": shape})


def _frame(pods: pd.DataFrame, submit: np.ndarray, runtime: np.ndarray) -> pd.DataFrame:
    n = len(pods)
    return pd.DataFrame({
        "job_id": pods["job_id"].to_numpy(), "task_id": np.zeros(n, dtype=np.int64),
        "submit_s": submit, "runtime_s": runtime, "cpu": pods["cpu"].to_numpy(),
        "mem_gib": pods["mem_gib"].to_numpy(), "user": np.full(n, "unknown", dtype=object),
        "job_name": pods["job_name"].to_numpy(), "priority": np.zeros(n, dtype=np.int64),
        "queue": pods["qos"].to_numpy(), "gpus": pods["gpus"].to_numpy()})


def _batch(pods: pd.DataFrame, runtime_s: float, gpu: str, report: LoadReport):
    report.note(f"no times in this pod list: every pod submitted at 0 and run "
                f"{runtime_s:g} s (batch_runtime_s)")
    n = len(pods)
    frame = _frame(pods, np.zeros(n), np.full(n, float(runtime_s)))
    _gpu_note(pods, report, gpu)
    return frame, {"start_s": 0.0, "end_s": float(runtime_s), "rule": "batch_runtime_s"}


def _gpu_note(pods: pd.DataFrame, report: LoadReport, mode: str) -> None:
    frac = int(((pods["share"] > 0) & (pods["share"] < 1)).sum())
    if frac:
        how = ("each asks that share (gpu=share): shares of one instance's GPUs are pooled"
               if mode == "share" else "each rents a whole GPU (gpu=whole; gpu=share shares)")
        report.note(f"{frac:,} pods ask for a share of one GPU (gpu_milli < 1000): {how}")


def _timed(table: Table, pods: pd.DataFrame, opts: Options, report: LoadReport):
    phase = strings(table, "pod_phase", empty_ok=False)
    qos = pods["qos"].to_numpy()
    for col, values, known in (("pod_phase", phase, PHASES), ("qos", qos, QOS)):
        bad = ~np.isin(values, known)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise table.error(i, col, f"expected one of {', '.join(known)}, got "
                              f"{values[i][:40]!r}")
    created = _whole(table, "creation_time")
    deleted = _whole(table, "deletion_time")
    sched = numbers(table, "scheduled_time", integer=True, empty_ok=True)
    pending = phase == "Pending"
    ran = ~pending
    for bad, why in (
        (ran & np.isnan(sched), "empty, but the pod is not Pending (it ran)"),
        (ran & (sched < created), "before the pod's creation_time"),
    ):
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise table.error(i, "scheduled_time", why)
    late = ran & (deleted < sched)
    if late.any():
        i = int(np.flatnonzero(late)[0])
        raise table.error(i, "deletion_time", f"{deleted[i]:.0f} is before scheduled_time "
                          f"{sched[i]:.0f}")
    early_del = deleted < created
    if early_del.any():
        i = int(np.flatnonzero(early_del)[0])
        raise table.error(i, "deletion_time", f"{deleted[i]:.0f} is before creation_time "
                          f"{created[i]:.0f}")
    trace_end = float(deleted.max())
    load_start = float(deleted.min())
    runtime = np.where(ran, deleted - np.nan_to_num(sched), 0.0)
    censored = ran & (phase == "Running") & (deleted == trace_end)
    start = load_start if opts.start_us is None else opts.start_us / 1e6
    end = trace_end if opts.end_us is None else opts.end_us / 1e6
    if end <= start:
        if opts.start_us is None and opts.end_us is None:  # the file's own times
            raise TraceError(f"{table.source}: every pod is deleted at {trace_end:,.0f} s: "
                             "no time between the load's start and the trace's end")
        raise ConfigError(f"format {FORMAT!r}: the window [{start:,.0f}, {end:,.0f}) s is empty "
                          f"(the load starts at {load_start:,.0f} s, the trace ends at "
                          f"{trace_end:,.0f} s)")
    submit = created.astype(np.float64)
    keep = np.ones(len(phase), dtype=bool)

    def drop(mask: np.ndarray, why: str) -> None:
        report.drop(why, int((mask & keep).sum()))
        keep[mask] = False

    drop(pending, "Pending pods (never scheduled: no scheduled_time, never ran)")
    drop(ran & ~np.isin(phase, list(opts.phases)),
         f"pods of a phase left out by phases={','.join(sorted(opts.phases))}")
    drop(ran & (runtime <= 0), "pods with deletion_time = scheduled_time (no runtime)")
    n_cens = int((censored & keep).sum())
    if not opts.keep_censored:
        drop(censored, f"censored pods (Running at the trace's end, {trace_end:,.0f} s; "
                       "censored=drop)")
    before = submit < start
    if opts.clip_early:
        alive = before & keep & (deleted > start)
        drop(before & ~alive, f"pods created before the window start ({start:,.0f} s) and "
                              "deleted by it")
        # an early pod still running at the start arrives there with its remaining time
        runtime = np.where(alive, deleted - np.maximum(np.nan_to_num(sched), start), runtime)
        submit = np.where(alive, start, submit)
        if alive.any():
            report.note(f"early=clip: {int(alive.sum()):,} pods created before the window "
                        f"start and running at it arrive at {start:,.0f} s with their "
                        "remaining runtime")
    else:
        drop(before, f"pods created before the window start ({start:,.0f} s; early=clip "
                     "keeps those running at it)")
    drop(submit >= end, f"pods created at or after the window end ({end:,.0f} s)")
    drop(deleted > end, f"pods deleted after the window end ({end:,.0f} s; whole pods only)")
    if n_cens:
        kept = int((censored & keep).sum())
        fate = (f"{kept:,} of them kept, ending at the trace's end (censored=keep)"
                if opts.keep_censored else "dropped (censored=drop)")
        report.note(f"censored: {n_cens:,} Running pods still alive at the trace's end "
                    f"({trace_end:,.0f} s): their runtime is a lower bound; {fate}")
    counts = Counter(phase[keep].tolist())
    report.note("kept pods by phase: " + ", ".join(f"{p}: {counts[p]:,}" for p in PHASES
                                                    if counts.get(p)))
    rule = ("load start: the file's first deletion (before it only pods still alive "
            "then were recorded)" if opts.start_us is None else "window_start_s")
    window = {"start_s": start, "end_s": end, "days": (end - start) / 86400.0,
              "rule": rule, "trace_end_s": trace_end, "censored_pods": n_cens,
              "censored_pods_kept": int((censored & keep).sum())}
    report.note(f"window [{start:,.0f}, {end:,.0f}] s ({window['days']:.1f} days; start: "
                f"{rule.split(':')[0]})")
    kept_pods = pods[keep]
    _gpu_note(kept_pods, report, opts.gpu)
    return _frame(kept_pods, submit[keep], runtime[keep].astype(np.float64)), window
