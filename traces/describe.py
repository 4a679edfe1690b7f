"""What a trace looks like: sizes, runtimes, shapes and offered load (``describe``), and a
three-panel picture of it (``plot``).

Definitions (all over the trace as given, e.g. after a window cut):
    span_s          first submit to the last task's end if every task started on arrival
                    (Trace.span_s); start_s / end_s are those two instants
    runtime_s       per task; tasks_per_job per job. Percentiles are numpy's default
                    (linear interpolation between order statistics)
    constrained     share of tasks CPU-constrained on the catalog's shape, i.e.
                    cpu * (GiB per vCPU of its largest type) >= mem_gib (m4: 4 GiB/vCPU; a
                    tie counts as CPU), and the rest memory-constrained
    offered_load    Σ request·runtime / span_s per dimension: the average demand if the
                    work were spread over the span; "<largest type>_equivalents" is the
                    largest of those divided by that type's capacity (for m4:
                    m4_16xlarge_equivalents, 64 vCPU / 256 GiB), a floor on the fleet
                    needed on average
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pricing.catalog import M4, Catalog
from traces.schema import Trace

PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0))


def _stats(values: np.ndarray) -> dict[str, float]:
    """mean, p50, p90, p99, max as plain floats (zeros for no values)."""
    if not len(values):
        return {"mean": 0.0, **{k: 0.0 for k, _ in PERCENTILES}, "max": 0.0}
    vals = np.asarray(values, dtype=np.float64)
    out = {"mean": float(vals.mean())}
    out.update({k: float(np.percentile(vals, q)) for k, q in PERCENTILES})
    out["max"] = float(vals.max())
    return out


def _tasks_per_job(trace: Trace) -> np.ndarray:
    if not len(trace):
        return np.zeros(0)
    return trace.frame.groupby("job_id").size().to_numpy()


def describe(trace: Trace, catalog: Catalog = M4) -> dict:
    """A JSON-serialisable summary of ``trace`` (plain ints and floats); see the module doc."""
    f = trace.frame
    cpu, mem = f["cpu"].to_numpy(dtype=float), f["mem_gib"].to_numpy(dtype=float)
    runtime = f["runtime_s"].to_numpy(dtype=float)
    submit = f["submit_s"].to_numpy(dtype=float)
    n = len(f)
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
        "runtime_s": _stats(runtime),
        "tasks_per_job": _stats(_tasks_per_job(trace)),
        "constrained": {"cpu": cpu_share, "mem": 1.0 - cpu_share if n else 0.0},
        "offered_load": {
            "vcpu": load_cpu,
            "mem_gib": load_mem,
            f"{big.name.replace('.', '_')}_equivalents": max(load_cpu / big.vcpu,
                                                             load_mem / big.mem_gib),
        },
    }
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


def plot(trace: Trace, out_png: str | Path) -> Path:
    """Write a PNG: task runtime CDF, tasks-per-job CDF (both log x) and arrivals per hour."""
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
    fig.savefig(out, format="png", dpi=100)
    return out
