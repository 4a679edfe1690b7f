"""What a trace looks like: sizes, runtimes, shapes, priorities, arrivals and offered load
(``describe``), and a three-panel picture of it (``plot``). The same figures for any trace,
synthetic or real, so a generator can be checked against a real window in one command
(e.g. against ../shared/data/google-2011/stats.json).

Definitions (all over the trace as given, e.g. after a window cut; an empty trace gives
zeros):
    span_s          first submit to the last task's end if every task started on arrival
                    (Trace.span_s); start_s / end_s are those two instants
    runtime_s       per task (mean, p10, p50, p90, p99, max); tasks_per_job per job (mean,
                    p50, p90, p99, max). Percentiles are numpy's default (linear
                    interpolation between order statistics)
    single_task_job_share
                    share of jobs with exactly one task
    cpu_request, mem_request_gib
                    p10, p50, p90, p99 of the request in vCPU and GiB over task rows (a job
                    of 1000 tasks weighs 1000 times a single-task job)
    priority_share  share of tasks in each Google 2011 priority band: free 0-1, middle
                    2-8, production 9-11 (the bands of ../shared/data/google-2011/STATS.md).
                    Tasks outside 0-11 are counted under "other", a key present only when
                    there are such tasks, so the shares always sum to 1. A trace whose
                    source has no priority field (SWF, UMass, M/M/s, a generic table
                    without a priority column: Trace.unknown) gives {"unknown": 1.0}:
                    its loader's 0 is a default, not a "free" band
    arrivals_per_hour
                    p10, p50, p90 and max of the number of tasks submitted in each whole
                    hour [t0 + k h, t0 + (k+1) h) that ends by the last submit, t0 being the
                    first submit; peak_to_trough = max / min of those counts. Hours are
                    counted over the arrival period, not span_s: after the last submit
                    every hour is empty by construction, and counting the runtime tail
                    would make every trough 0. The partial hour before the last submit is
                    left out (its count would be low only because it is short). With no
                    whole hour (arrivals spanning less than an hour) the counts are 0 and
                    peak_to_trough is None (JSON null); it is also None when some whole
                    hour has no arrival (the ratio is unbounded)
    constrained     share of tasks CPU-constrained on the catalog's shape, i.e.
                    cpu * (GiB per vCPU of its largest type) >= mem_gib (m4: 4 GiB/vCPU; a
                    tie counts as CPU), and the rest memory-constrained
    offered_load    Σ request·runtime / span_s per dimension: the average demand if the
                    work were spread over the span; "<largest type>_equivalents" is the
                    largest of those divided by that type's capacity (for m4:
                    m4_16xlarge_equivalents, 64 vCPU / 256 GiB), a floor on the fleet
                    needed on average; "gpus" when some task requests GPUs
    gpus            only when some task requests GPUs: GPU tasks and jobs, GPU-hours
                    (Σ gpus·runtime) and percentiles of the GPU request of GPU tasks
                    needed on average
    anti_affinity   only for a trace with that column: the flagged tasks and the jobs that
                    have at least one (Google 2011: different_machine on the SUBMIT)
    loader_window   only when the loader chose a window itself (alibaba-gpu2023: its
                    start_s, end_s, days and the rule that set the start)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stratus.pricing.catalog import M4, Catalog
from stratus.traces.schema import Trace

PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0))
WIDE_PERCENTILES = (("p10", 10.0), *PERCENTILES)
HOURLY_PERCENTILES = (("p10", 10.0), ("p50", 50.0), ("p90", 90.0))
#: Google 2011 priority bands (name, lowest, highest), as in google-2011/STATS.md
PRIORITY_BANDS = (("free", 0, 1), ("middle", 2, 8), ("production", 9, 11))
OTHER_PRIORITY = "other"
UNKNOWN_PRIORITY = "unknown"  # the source has no priority field
HOUR_S = 3600.0


def _percentiles(values: np.ndarray, which=PERCENTILES) -> dict[str, float]:
    """The named percentiles as plain floats (zeros for no values)."""
    if not len(values):
        return {k: 0.0 for k, _ in which}
    vals = np.asarray(values, dtype=np.float64)
    return {k: float(v) for (k, _), v in zip(which, np.percentile(vals, [q for _, q in which]))}


def _stats(values: np.ndarray, which=PERCENTILES) -> dict[str, float]:
    """mean, the named percentiles, max as plain floats (zeros for no values)."""
    n = len(values)
    out = {"mean": float(np.mean(values)) if n else 0.0, **_percentiles(values, which)}
    out["max"] = float(np.max(values)) if n else 0.0
    return out


def _priority_share(priority: np.ndarray) -> dict[str, float]:
    """Task shares per Google 2011 band; "other" only if some priority is outside them."""
    n = len(priority)
    out, inside = {}, 0
    for name, lo, hi in PRIORITY_BANDS:
        k = int(np.count_nonzero((priority >= lo) & (priority <= hi)))
        out[name] = k / n if n else 0.0
        inside += k
    if inside < n:
        out[OTHER_PRIORITY] = (n - inside) / n
    return out


def _arrivals_per_hour(submit: np.ndarray) -> dict[str, float | None]:
    """Percentiles, max and peak-to-trough of task arrivals per whole hour (module doc)."""
    hours = int((submit.max() - submit.min()) // HOUR_S) if len(submit) else 0
    if hours < 1:
        return {**{k: 0.0 for k, _ in HOURLY_PERCENTILES}, "max": 0.0, "peak_to_trough": None}
    k = ((submit - submit.min()) // HOUR_S).astype(np.int64)
    counts = np.bincount(k[k < hours], minlength=hours)
    trough = int(counts.min())
    return {**_percentiles(counts, HOURLY_PERCENTILES), "max": float(counts.max()),
            "peak_to_trough": float(counts.max() / trough) if trough else None}


def _tasks_per_job(trace: Trace) -> np.ndarray:
    if not len(trace):
        return np.zeros(0)
    return trace.frame.groupby("job_id").size().to_numpy()


def describe(trace: Trace, catalog: Catalog = M4) -> dict:
    """A JSON-serialisable summary of ``trace`` (plain ints, floats and None); see the
    module doc."""
    f = trace.frame
    cpu, mem = f["cpu"].to_numpy(dtype=float), f["mem_gib"].to_numpy(dtype=float)
    runtime = f["runtime_s"].to_numpy(dtype=float)
    submit = f["submit_s"].to_numpy(dtype=float)
    n = len(f)
    per_job = _tasks_per_job(trace)
    big = catalog.types[-1]
    gib_per_vcpu = big.mem_gib / big.vcpu
    cpu_share = float(np.mean(cpu * gib_per_vcpu >= mem)) if n else 0.0
    span = trace.span_s
    load_cpu = float((cpu * runtime).sum() / span) if span > 0 else 0.0
    load_mem = float((mem * runtime).sum() / span) if span > 0 else 0.0
    out = {
        "name": trace.name,
        "jobs": int(trace.n_jobs),
        "tasks": int(n),
        "users": int(f["user"].nunique()),
        "span_s": float(span),
        "start_s": float(submit.min()) if n else 0.0,
        "end_s": float((submit + runtime).max()) if n else 0.0,
        "runtime_s": _stats(runtime, WIDE_PERCENTILES),
        "tasks_per_job": _stats(per_job),
        "single_task_job_share": float(np.mean(per_job == 1)) if len(per_job) else 0.0,
        "cpu_request": _percentiles(cpu, WIDE_PERCENTILES),
        "mem_request_gib": _percentiles(mem, WIDE_PERCENTILES),
        "priority_share": ({UNKNOWN_PRIORITY: 1.0 if n else 0.0} if trace.unknown("priority")
                           else _priority_share(f["priority"].to_numpy(dtype=np.int64))),
        "arrivals_per_hour": _arrivals_per_hour(submit),
        "constrained": {"cpu": cpu_share, "mem": 1.0 - cpu_share if n else 0.0},
        "offered_load": {
            "vcpu": load_cpu,
            "mem_gib": load_mem,
            f"{big.name.replace('.', '_')}_equivalents": max(load_cpu / big.vcpu,
                                                             load_mem / big.mem_gib),
        },
    }
    if "gpus" in f.columns and (f["gpus"].to_numpy() > 0).any():
        g = f["gpus"].to_numpy(dtype=float)
        on = g > 0
        out["gpus"] = {  # only when some task requests a GPU
            "tasks": int(on.sum()),
            "jobs": int(f["job_id"][on].nunique()),
            "gpu_hours": float((g * runtime).sum() / 3600.0),
            "request": _percentiles(g[on], WIDE_PERCENTILES),
        }
        out["offered_load"]["gpus"] = float((g * runtime).sum() / span) if span > 0 else 0.0
    if trace.has("anti_affinity"):
        flagged = f["anti_affinity"].to_numpy(dtype=bool)
        out["anti_affinity"] = {"tasks": int(flagged.sum()),
                                "jobs": int(f["job_id"][flagged].nunique())}
    if "loader_window" in trace.meta and "window" not in trace.meta:
        # the window the loader chose (Alibaba GPU 2023); a window cut from the trace
        # afterwards (Trace.window) is another, so it is not shown as this one
        out["loader_window"] = trace.meta["loader_window"]
    if "load_report" in trace.meta:
        out["load_report"] = trace.meta["load_report"]
    return out


def _cdf(ax, values: np.ndarray, xlabel: str) -> None:
    vals = np.sort(np.asarray(values, dtype=float))
    if len(vals):
        ax.step(vals, np.arange(1, len(vals) + 1) / len(vals), where="post")
        if vals[0] > 0:
            ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)


def _arrivals(ax, submit: np.ndarray) -> None:
    if len(submit):
        hours = (submit - submit.min()) / 3600.0
        counts = np.bincount(hours.astype(np.int64))
        ax.step(np.arange(len(counts)), counts, where="post")
    ax.set_xlabel("hours since the first submit")
    ax.set_ylabel("task arrivals per hour")
    ax.grid(True, alpha=0.3)


def plot(trace: Trace, out_png: str | Path, fmt: str = "png") -> Path:
    """Write a picture (``fmt``: png, svg or pdf): task runtime CDF, tasks-per-job CDF (both
    log x) and arrivals per hour."""
    # Lazy, and through the Agg canvas directly: no pyplot, so no global backend change
    # and no display needed.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2, ax3 = fig.subplots(1, 3)
    _cdf(ax1, trace.frame["runtime_s"].to_numpy(), "task runtime (s)")
    _cdf(ax2, _tasks_per_job(trace), "tasks per job")
    _arrivals(ax3, trace.frame["submit_s"].to_numpy(dtype=float))
    fig.suptitle(f"{trace.name}: {trace.n_jobs:,} jobs, {len(trace):,} tasks")
    out = Path(out_png)
    fig.savefig(out, format=fmt, dpi=100)
    return out
