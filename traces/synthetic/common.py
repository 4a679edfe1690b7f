"""Shared pieces of the synthetic workload generators: arrivals, bounded draws, the frame.

Everything takes a seeded ``numpy.random.Generator`` and works on whole arrays (one entry
per job or per task); nothing loops over jobs or tasks in Python.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from stratus.base.errors import ConfigError

DAY_S = 86_400.0
#: Stratus §4.2 replays 1-day windows and drops jobs that end after the window, so no
#: task in a calibrated trace runs longer than a day.
MAX_RUNTIME_S = DAY_S
#: The largest m4 shape, m4.16xlarge (Stratus Fig. 3c): every task must fit on it.
MAX_CPU = 64.0
MAX_MEM_GIB = 256.0
#: m4 shapes give 4 GiB per vCPU; a task is CPU-constrained on them iff cpu * 4 >= mem.
M4_GIB_PER_VCPU = 4.0
#: Requests are rounded to the integer units of stratus.base.resources (milli-vCPU, MiB).
CPU_QUANTUM = 1e-3
MEM_QUANTUM_GIB = 1.0 / 1024.0


def make_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def substreams(seed: int, n: int) -> list[np.random.Generator]:
    """Independent generators from one seed, so e.g. the program catalog does not change
    when only the trace length changes."""
    return make_rng(seed).spawn(n)


# --- arrivals ----------------------------------------------------------------------------

def sinusoid_rate(t_s: np.ndarray, mean_rate: float, peak_to_trough: float,
                  peak_hour: float) -> np.ndarray:
    """Rate at absolute times ``t_s`` (0 = midnight): a daily sinusoid averaging
    ``mean_rate`` whose maximum is ``peak_to_trough`` times its minimum."""
    amp = (peak_to_trough - 1.0) / (peak_to_trough + 1.0)
    phase = 2.0 * np.pi * (np.asarray(t_s) / DAY_S - peak_hour / 24.0)
    return mean_rate * (1.0 + amp * np.cos(phase))


def diurnal_arrivals(rng: np.random.Generator, mean_rate: float, start_s: float,
                     duration_s: float, peak_to_trough: float = 1.0,
                     peak_hour: float = 14.0) -> np.ndarray:
    """Sorted arrival times of a non-homogeneous Poisson process on
    [start_s, start_s + duration_s), by thinning a homogeneous one at the peak rate."""
    amp = (peak_to_trough - 1.0) / (peak_to_trough + 1.0)
    peak_rate = mean_rate * (1.0 + amp)
    n = rng.poisson(peak_rate * duration_s)
    t = start_s + np.sort(rng.uniform(0.0, duration_s, size=n))
    keep = rng.uniform(0.0, peak_rate, size=n) < sinusoid_rate(t, mean_rate, peak_to_trough,
                                                               peak_hour)
    return t[keep]


def bursty_arrivals(rng: np.random.Generator, mean_rate: float, start_s: float,
                    duration_s: float, peak_to_trough: float = 1.0, peak_hour: float = 14.0,
                    hourly_sigma: float = 0.0, batch_share: float = 0.0) -> np.ndarray:
    """Sorted job arrival times averaging ``mean_rate``: the diurnal sinusoid, times a
    lognormal factor per clock hour (ln-sd ``hourly_sigma``, mean 1), and arrivals that come
    in batches: each brings one more job at the same instant with chance ``batch_share``
    (so a geometric number of jobs, mean 1 / (1 - batch_share)). ``start_s`` and
    ``duration_s`` must cover whole hours for the hourly factors to be drawn per hour."""
    event_rate = mean_rate * (1.0 - batch_share)
    if hourly_sigma <= 0:
        t = diurnal_arrivals(rng, event_rate, start_s, duration_s, peak_to_trough, peak_hour)
    else:
        hours = int(np.ceil(duration_s / 3600.0))
        factor = np.exp(hourly_sigma * rng.standard_normal(hours) - hourly_sigma**2 / 2)
        t = diurnal_arrivals(rng, event_rate * factor.max(), start_s, duration_s,
                             peak_to_trough, peak_hour)
        h = np.minimum(((t - start_s) // 3600.0).astype(np.int64), hours - 1)
        t = t[rng.random(t.size) < factor[h] / factor.max()]
    if batch_share > 0:
        t = np.repeat(t, rng.geometric(1.0 - batch_share, size=t.size))
    return t


# --- bounded draws -------------------------------------------------------------------------

def bounded_lognormal(rng: np.random.Generator, median, sigma, low: float, high: float,
                      size: int | None = None) -> np.ndarray:
    """Lognormal draws around ``median`` with ln-sd ``sigma`` (scalars or per-draw arrays)
    truncated to [low, high] by redrawing the out-of-range ones in whole-array passes, so the
    bounds leave no spike of clipped values."""
    shape = (size,) if size is not None else np.broadcast(median, sigma).shape
    med = np.broadcast_to(np.asarray(median, dtype=np.float64), shape)
    sig = np.broadcast_to(np.asarray(sigma, dtype=np.float64), shape)
    out = med * np.exp(sig * rng.standard_normal(shape))
    bad = np.flatnonzero((out < low) | (out > high))
    for _ in range(64):  # each pass keeps a good share of the rest; 64 passes never run out
        if not bad.size:
            break
        out[bad] = med[bad] * np.exp(sig[bad] * rng.standard_normal(bad.size))
        bad = bad[(out[bad] < low) | (out[bad] > high)]
    return np.clip(out, low, high)  # only bites if a median sits far outside the bounds


def power_law_pmf(lo: int, hi: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Integers lo..hi with P(n) proportional to n**-alpha."""
    values = np.arange(lo, hi + 1)
    w = values.astype(np.float64) ** -alpha
    return values, w / w.sum()


def zipf_weights(n: int, exponent: float) -> np.ndarray:
    """Normalised weights of ranks 1..n proportional to rank**-exponent."""
    w = np.arange(1, n + 1, dtype=np.float64) ** -exponent
    return w / w.sum()


def quantize(x: np.ndarray, quantum: float, low: float, high: float) -> np.ndarray:
    """Round to the resource unit and keep within [low, high] (both multiples of it)."""
    return np.clip(np.round(x / quantum) * quantum, low, high)


# --- the frame -------------------------------------------------------------------------------

def expand_jobs(jobs: Mapping[str, np.ndarray], tasks_per_job: np.ndarray,
                tasks: Mapping[str, np.ndarray] | None = None) -> pd.DataFrame:
    """A task-per-row frame from per-job columns (repeated for each task, so the tasks of a
    job share them) and optional per-task columns; adds ``task_id`` = index within the job.
    Columns given as ``pd.Categorical`` (user, job_name) are repeated by their codes, which
    avoids building a Python string per task."""
    n_tasks = np.asarray(tasks_per_job, dtype=np.int64)
    total = int(n_tasks.sum())
    first = np.cumsum(n_tasks) - n_tasks
    cols: dict[str, object] = {}
    for name, col in jobs.items():
        if isinstance(col, pd.Categorical):
            cols[name] = pd.Categorical.from_codes(np.repeat(col.codes, n_tasks),
                                                   categories=col.categories)
        else:
            cols[name] = np.repeat(np.asarray(col), n_tasks)
    cols["task_id"] = np.arange(total, dtype=np.int64) - np.repeat(first, n_tasks)
    for name, col in (tasks or {}).items():
        cols[name] = np.asarray(col)
    return pd.DataFrame(cols)


def numbered(prefix: str, ids: np.ndarray, width: int = 5) -> np.ndarray:
    """``f"{prefix}{id:0{width}d}"`` for each id, as one array operation."""
    ids = np.asarray(ids, dtype=np.int64)
    if not ids.size:  # np.char.zfill cannot size an empty result
        return np.array([], dtype=str)
    return np.char.add(prefix, np.char.zfill(ids.astype(str), width))


def labels(prefix: str, ids: np.ndarray) -> pd.Categorical:
    """Categorical ``numbered(prefix, ids)``, formatting each distinct id once."""
    uniq, codes = np.unique(np.asarray(ids, dtype=np.int64), return_inverse=True)
    return pd.Categorical.from_codes(codes.astype(np.int64),
                                     categories=numbered(prefix, uniq))


# --- parameters ------------------------------------------------------------------------------

def check_common(hours: float, seed: int, scale: float, start_s: float) -> None:
    """ConfigError naming the first bad common parameter."""
    if not (isinstance(hours, (int, float)) and math.isfinite(hours) and hours > 0):
        raise ConfigError(f"synthetic trace parameter 'hours' must be > 0, got {hours!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"synthetic trace parameter 'seed' must be an integer >= 0, "
                          f"got {seed!r}")
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ConfigError(f"synthetic trace parameter 'scale' must be > 0, got {scale!r}")
    if not (isinstance(start_s, (int, float)) and math.isfinite(start_s)):
        raise ConfigError(f"synthetic trace parameter 'start_s' must be a number, got {start_s!r}")


# Peak bytes a generator holds per task while it builds a trace (measured: ~195 for the
# program-model generators at 0.1-0.2 scale), and the longest stretch it generates: every
# day of the window is drawn, so a huge 'hours' costs time even at a tiny scale.
BYTES_PER_TASK = 256
MAX_DAYS = 10_000


def available_memory() -> int:
    """Bytes this process could still allocate: MemAvailable on Linux, else physical memory
    (0: unknown, then nothing is refused)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import os

        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def check_size(generator: str, expected_tasks: float, days: float,
               bytes_per_task: int = BYTES_PER_TASK, what: str = "tasks") -> None:
    """ConfigError, before anything is generated, for a trace that cannot fit in memory
    (or a window of more than MAX_DAYS days), with the numbers."""
    if days > MAX_DAYS:
        raise ConfigError(f"synthetic:{generator}: a window of {days:,.0f} days is too long "
                          f"(at most {MAX_DAYS:,} days)")
    need = expected_tasks * bytes_per_task
    have = available_memory()
    if have and need > have:
        raise ConfigError(f"synthetic:{generator}: about {expected_tasks:,.3g} {what} need "
                          f"~{need / 2**30:,.1f} GiB to generate, more than the "
                          f"{have / 2**30:,.1f} GiB of memory available; lower 'scale' or "
                          "'hours'")


def fmt_param(v: object) -> str:
    """Compact, round-trippable text for a parameter value (1.0 -> "1", 0.25 -> "0.25")."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v)


def trace_name(generator: str, params: Mapping[str, object],
               defaults: Mapping[str, object]) -> str:
    """``synthetic:NAME?scale=..&seed=..&hours=..`` plus any other parameter off its default;
    feeding the name back to ``stratus.traces.synthetic.from_spec`` regenerates the trace."""
    keys = ["scale", "seed", "hours"] + [k for k in params
                                          if k not in ("scale", "seed", "hours")
                                          and params[k] != defaults.get(k)]
    return f"synthetic:{generator}?" + "&".join(f"{k}={fmt_param(params[k])}" for k in keys)
