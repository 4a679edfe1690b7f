"""The recurring-program workload model behind the Google-like and TwoSigma-like traces.

A cluster has a catalog of *programs* (job names), each owned by one user. A program fixes
its tasks per job, its per-task request and its typical task runtime; every job is a run of
one program. Runs of a program vary around it: the job's runtime is the program's times a
lognormal factor (``job_sigma``) and each task's is the job's times a smaller one
(``task_sigma``). A share of jobs (``adhoc_share``) are one-off runs with a fresh name, which
no history-based estimator (JVuPredict, Stratus §3.4) can match by name.

Job sizes come in classes (tasks-per-job ranges) with fixed shares of jobs, so the job-size
mix does not hinge on which programs the catalog happens to draw as popular.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from . import common as c


@dataclass(frozen=True)
class SizeClass:
    """Jobs with ``lo``..``hi`` tasks (P(n) ~ n**-alpha within) and their typical runtimes.

    The optional fields override the model-wide knobs for this class only (None: use the
    model's), because in real traces big jobs ask for more, run longer and are less aligned
    than small ones (measured on Google 2011, see google.py).
    """

    share: float  # fraction of jobs in this class
    lo: int
    hi: int
    alpha: float
    runtime_median_s: float  # median over programs of the typical task runtime
    runtime_sigma: float  # ln-sd over programs of the typical task runtime (lower half)
    runtime_sigma_hi: float | None = None  # ln-sd of the upper half (None: runtime_sigma)
    cpu_median: float | None = None  # vCPU per task, lognormal over programs
    cpu_sigma: float | None = None
    mem_median_gib: float | None = None  # set: memory lognormal itself, correlated with cpu
    mem_sigma: float | None = None
    cpu_mem_corr: float = 0.0  # correlation of ln(cpu) and ln(mem) over programs
    cpu_rt_corr: float = 0.0  # correlation of ln(cpu) and ln(typical runtime)
    size_rt_corr: float = 0.0  # correlation of the job size and ln(typical runtime)
    size_cpu_corr: float = 0.0  # correlation of the job size and ln(cpu)
    tiny_cpu_share: float = 0.0  # programs asking for the smallest CPU amount (TINY_CPU)
    task_sigma_median: float | None = None  # set: each program has its own within-job
    task_sigma_spread: float = 0.0  # ln-sd: lognormal(median, spread) over programs
    priority_probs: tuple[float, ...] | None = None  # over the model's priorities
    adhoc_share: float | None = None


@dataclass(frozen=True)
class ProgramModel:
    """Every calibration knob of a program-based workload (see google.py, twosigma.py)."""

    name: str
    classes: tuple[SizeClass, ...]
    tasks_per_day: float  # expected tasks per day at scale 1
    programs: int  # catalog size at scale 1
    users: int  # users at scale 1
    program_zipf: float  # popularity of programs within a class ~ rank**-program_zipf
    user_zipf: float  # programs per user ~ rank**-user_zipf
    adhoc_share: float
    job_sigma: float  # ln-sd of a run's runtime around its program's
    task_sigma: float  # ln-sd of a task's runtime around its job's
    cpu_median: float  # vCPU per task, lognormal over programs
    cpu_sigma: float
    cpu_range: tuple[float, float]
    gib_per_cpu_median: float  # memory request per vCPU, lognormal over programs
    gib_per_cpu_sigma: float
    mem_range: tuple[float, float]
    priorities: tuple[int, ...]
    priority_probs: tuple[float, ...]
    peak_to_trough: float  # diurnal job arrival rate, max over min
    peak_hour: float  # hour of day (trace time mod 1 day) of the peak
    min_runtime_s: float = 1.0
    cpu_grid: float = 0.0  # > 0: requests of at least one grid step snap to its multiples
    hourly_sigma: float = 0.0  # ln-sd of a per-hour factor on the arrival rate (burstiness)
    batch_share: float = 0.0  # chance that an arrival brings one more job at the same instant
    max_task_sigma: float = 1.5  # cap on a program's within-job ln-sd
    task_sigma_hi_ratio: float = 1.0  # within-job jitter above the job's runtime, relative
    jobs_per_day: float | None = None  # set: the volume is in jobs a day (tasks_per_day unused)


#: The smallest CPU request a tiny program asks for (Google 2011 has many near-zero CPU
#: requests; the smallest non-zero one scales to ~0.04 vCPU on 64 vCPU, Stratus §4.2).
TINY_CPU = 0.04


def _per_class(m: ProgramModel, cls: np.ndarray, field: str, default: float) -> np.ndarray:
    """Per-program value of a class knob (the model's ``default`` where a class has none)."""
    vals = np.array([default if getattr(sc, field) is None else getattr(sc, field)
                     for sc in m.classes], dtype=np.float64)
    return vals[cls]


def _snap(cpu: np.ndarray, grid: float) -> np.ndarray:
    """Requests of at least one grid step, rounded to its multiples: real schedulers' users
    ask for round amounts, and round sizes pack differently from continuous ones."""
    if grid <= 0:
        return cpu
    return np.where(cpu >= grid, np.maximum(grid, np.round(cpu / grid) * grid), cpu)


_INV_CDF = np.vectorize(NormalDist().inv_cdf)


def _normals(rng: np.random.Generator, cls: np.ndarray, stratified: bool) -> np.ndarray:
    """Standard normal draws, one per program; ``stratified``: within each class the draws
    fall one into each of equal-probability strata (in random order), so a class of a dozen
    programs still covers its distribution instead of drawing, say, only short runtimes."""
    if not stratified:
        return rng.standard_normal(cls.size)
    z = np.empty(cls.size)
    for k in np.unique(cls):
        idx = np.flatnonzero(cls == k)
        u = (rng.permutation(idx.size) + rng.random(idx.size)) / idx.size
        z[idx] = _INV_CDF(np.clip(u, 1e-12, 1 - 1e-12))
    return z


def _draw_programs(rng: np.random.Generator, m: ProgramModel, cls: np.ndarray,
                   n_users: int, stratified: bool = False) -> dict[str, np.ndarray]:
    """Attributes of programs (or one-off jobs) of the given size classes."""
    n = cls.size
    ntasks = np.ones(n, dtype=np.int64)
    # Tasks per job by inverting the class's power law at Phi(z_n), so that the runtime can
    # be correlated with the size through z_n (a Gaussian copula).
    z_n = _normals(rng, cls, stratified)
    u = 0.5 * (1.0 + np.vectorize(math.erf)(z_n / math.sqrt(2.0))) if n else z_n
    for k, sc in enumerate(m.classes):  # a handful of classes, vectorised within each
        idx = np.flatnonzero(cls == k)
        values, probs = c.power_law_pmf(sc.lo, sc.hi, sc.alpha)
        cdf = np.cumsum(probs)
        ntasks[idx] = values[np.minimum(np.searchsorted(cdf, u[idx]), values.size - 1)]
    rt_median = np.array([sc.runtime_median_s for sc in m.classes])[cls]
    rt_sigma = np.array([sc.runtime_sigma for sc in m.classes])[cls]
    rho_nc = _per_class(m, cls, "size_cpu_corr", 0.0)
    z_cpu = rho_nc * z_n + np.sqrt(1 - rho_nc**2) * _normals(rng, cls, stratified)
    # Typical runtime: lognormal per class, correlated with the CPU request where the class
    # says so (bigger tasks run longer in Google 2011), kept a factor 2 inside the runtime
    # bounds so runs jittered around it can still land on both sides.
    # ln runtime = a z_cpu + b z_n + c z with the class's correlations to cpu and size
    # (z_cpu and z_n themselves correlated by rho_nc): solve the 2x2 system for a, b.
    r_c = _per_class(m, cls, "cpu_rt_corr", 0.0)
    r_n = _per_class(m, cls, "size_rt_corr", 0.0)
    a = (r_c - r_n * rho_nc) / (1 - rho_nc**2)
    b = (r_n - r_c * rho_nc) / (1 - rho_nc**2)
    resid = np.sqrt(np.maximum(0.0, 1 - a**2 - b**2 - 2 * a * b * rho_nc))
    z_rt = a * z_cpu + b * z_n + resid * _normals(rng, cls, stratified)
    # Real runtimes are skewed even in log space (a longer upper tail): the upper half may
    # have its own ln-sd (a split lognormal).
    rt_sigma_hi = _per_class(m, cls, "runtime_sigma_hi", np.nan)
    rt_sigma_hi = np.where(np.isnan(rt_sigma_hi), rt_sigma, rt_sigma_hi)
    runtime = rt_median * np.exp(z_rt * np.where(z_rt < 0, rt_sigma, rt_sigma_hi))
    lo_rt, hi_rt = 2 * m.min_runtime_s, c.MAX_RUNTIME_S / 2
    out = np.flatnonzero((runtime < lo_rt) | (runtime > hi_rt))
    runtime[out] = c.bounded_lognormal(rng, rt_median[out], rt_sigma[out], lo_rt, hi_rt)
    cpu_med = _per_class(m, cls, "cpu_median", m.cpu_median)
    cpu_sig = _per_class(m, cls, "cpu_sigma", m.cpu_sigma)
    cpu = np.clip(cpu_med * np.exp(cpu_sig * z_cpu), *m.cpu_range)
    cpu = _snap(cpu, m.cpu_grid)
    tiny = rng.random(n) < _per_class(m, cls, "tiny_cpu_share", 0.0)
    cpu[tiny] = TINY_CPU
    z_mem = _normals(rng, cls, stratified)
    own_mem = np.array([sc.mem_median_gib is not None for sc in m.classes])[cls]
    rho = _per_class(m, cls, "cpu_mem_corr", 0.0)
    mem_med = _per_class(m, cls, "mem_median_gib", 1.0)
    mem_sig = _per_class(m, cls, "mem_sigma", 0.0)
    mem_own = mem_med * np.exp(mem_sig * (rho * z_cpu + np.sqrt(1 - rho**2) * z_mem))
    mem_ratio = cpu * np.exp(np.log(m.gib_per_cpu_median) + m.gib_per_cpu_sigma * z_mem)
    mem = np.clip(np.where(own_mem, mem_own, mem_ratio), *m.mem_range)
    # Within-job spread of task runtimes: per program where the class says so.
    tsig_med = _per_class(m, cls, "task_sigma_median", m.task_sigma)
    tsig_spread = _per_class(m, cls, "task_sigma_spread", 0.0)
    tsig = np.minimum(tsig_med * np.exp(tsig_spread * rng.standard_normal(n)), m.max_task_sigma)
    prio_vals = np.asarray(m.priorities, dtype=np.int64)
    priority = np.empty(n, dtype=np.int64)
    for k, sc in enumerate(m.classes):
        idx = np.flatnonzero(cls == k)
        probs = np.asarray(sc.priority_probs or m.priority_probs, dtype=np.float64)
        priority[idx] = rng.choice(prio_vals, size=idx.size, p=probs / probs.sum())
    return {
        "ntasks": ntasks,
        "runtime": runtime,
        "task_sigma": tsig,
        "cpu": c.quantize(cpu, c.CPU_QUANTUM, c.CPU_QUANTUM, c.MAX_CPU),
        "mem": c.quantize(mem, c.MEM_QUANTUM_GIB, c.MEM_QUANTUM_GIB, c.MAX_MEM_GIB),
        "priority": priority,
        "user": rng.choice(n_users, size=n, p=c.zipf_weights(n_users, m.user_zipf)),
    }


class Catalog:
    """The programs of a cluster of the given scale and their popularity."""

    def __init__(self, rng: np.random.Generator, m: ProgramModel, scale: float) -> None:
        shares = np.array([sc.share for sc in m.classes])
        self.class_shares = shares / shares.sum()
        self.adhoc = np.array([m.adhoc_share if sc.adhoc_share is None else sc.adhoc_share
                               for sc in m.classes])
        self.n_users = max(5, round(m.users * scale))
        # Programs per class in proportion to its share of jobs; at least 3 so a class is
        # never a single program.
        counts = np.maximum(3, np.round(self.class_shares * m.programs * scale)).astype(int)
        cls = np.repeat(np.arange(len(m.classes)), counts)
        self.first = np.cumsum(counts) - counts  # index of each class's first program
        self.within = [c.zipf_weights(k, m.program_zipf) for k in counts]  # popularity
        self.attrs = _draw_programs(rng, m, cls, self.n_users, stratified=True)
        self.size = cls.size
        # Expected tasks per job: per class, catalog runs and one-off runs.
        cat_mean = np.array([np.dot(w, self.attrs["ntasks"][f:f + w.size])
                             for f, w in zip(self.first, self.within)])
        pmf_mean = np.array([np.dot(*c.power_law_pmf(sc.lo, sc.hi, sc.alpha))
                             for sc in m.classes])
        self.mean_tasks_per_job = float(np.dot(
            self.class_shares, (1 - self.adhoc) * cat_mean + self.adhoc * pmf_mean))

    def pick(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(class, program) of ``n`` jobs; program -1 marks a one-off run of its class."""
        cls = rng.choice(self.class_shares.size, size=n, p=self.class_shares)
        prog = np.full(n, -1, dtype=np.int64)
        recurring = rng.random(n) >= self.adhoc[cls]
        for k, w in enumerate(self.within):
            idx = np.flatnonzero(recurring & (cls == k))
            prog[idx] = self.first[k] + rng.choice(w.size, size=idx.size, p=w)
        return cls, prog


def expected_jobs(mean_rate: float, m: ProgramModel, start_s: float, duration_s: float) -> float:
    """Integral of the sinusoidal job rate over the window (the hourly factors average 1)."""
    amp = (m.peak_to_trough - 1.0) / (m.peak_to_trough + 1.0)
    w = 2.0 * np.pi / c.DAY_S
    ph = 2.0 * np.pi * m.peak_hour / 24.0
    wave = (np.sin(w * (start_s + duration_s) - ph) - np.sin(w * start_s - ph)) / w
    return float(mean_rate * (duration_s + amp * wave))


DAY_ID_STRIDE = 10_000_000  # job ids: day * stride + index within the day


def _day_jobs(m: ProgramModel, cat: Catalog, seed: int, day: int, mean_rate: float) -> dict:
    """Every job submitted on ``day`` (trace time [day, day + 1) days), from a stream of its
    own: a window is a slice of one endless trace, and the days before a replay are real
    history for an estimator to learn from, never a copy of the replayed jobs."""
    rng = np.random.default_rng([seed, 0x10B5, day + 2**31])
    submit = c.bursty_arrivals(rng, mean_rate, day * c.DAY_S, c.DAY_S, m.peak_to_trough,
                               m.peak_hour, m.hourly_sigma, m.batch_share)
    n = submit.size
    cls, prog = cat.pick(rng, n)
    adhoc = np.flatnonzero(prog < 0)
    attrs = {k: v[np.maximum(prog, 0)] for k, v in cat.attrs.items()}
    one_off = _draw_programs(rng, m, cls[adhoc], cat.n_users)
    for k, v in one_off.items():
        attrs[k][adhoc] = v
    job_id = day * DAY_ID_STRIDE + np.arange(n, dtype=np.int64)
    name_code = prog.copy()
    name_code[adhoc] = -1 - np.arange(adhoc.size)  # one-offs: named after their job id below
    job_rt = c.bounded_lognormal(rng, attrs["runtime"], m.job_sigma, m.min_runtime_s,
                                 c.MAX_RUNTIME_S)
    # Within a job, tasks that end early (failed, killed with the job) spread further than
    # tasks that overrun: the upper half of the jitter is scaled by task_sigma_hi_ratio.
    z = rng.standard_normal(int(attrs["ntasks"].sum()))
    sig = np.repeat(attrs["task_sigma"], attrs["ntasks"])
    task_rt = np.clip(np.repeat(job_rt, attrs["ntasks"])
                      * np.exp(sig * z * np.where(z > 0, m.task_sigma_hi_ratio, 1.0)),
                      m.min_runtime_s, c.MAX_RUNTIME_S)
    del attrs["task_sigma"]
    return {"submit": submit, "job_id": job_id, "name_code": name_code, "adhoc_ids": job_id[adhoc],
            "task_rt": task_rt, **attrs}


def generate(m: ProgramModel, hours: float, seed: int, scale: float,
             start_s: float, whole_jobs: bool = True) -> tuple[pd.DataFrame, dict]:
    """The task frame of one window of the workload, and facts for the trace's meta.

    ``whole_jobs``: keep only jobs that also end inside the window, as Stratus §4.2 cuts
    its 1-day ranges of the real traces (the calibration targets are measured on such a
    cut); else every job submitted in the window, however long it runs."""
    c.check_common(hours, seed, scale, start_s)
    rng_cat = c.substreams(seed, 2)[0]
    duration = hours * 3600.0
    end_s = start_s + duration
    first_day, end_day = np.floor(start_s / c.DAY_S), np.ceil(end_s / c.DAY_S)
    # the program catalog grows with the scale too: refuse before drawing it
    c.check_size(m.name, (m.programs + m.users) * scale, end_day - first_day, what="programs")
    cat = Catalog(rng_cat, m, scale)
    # Job arrival rate: from the volume in jobs where the model gives one (a trace published as
    # a job count), else from tasks through the catalog's mean job size.
    if m.jobs_per_day is not None:
        mean_rate = m.jobs_per_day * scale / c.DAY_S
    else:
        mean_rate = m.tasks_per_day * scale / cat.mean_tasks_per_job / c.DAY_S
    c.check_size(m.name, mean_rate * cat.mean_tasks_per_job * (end_day - first_day) * c.DAY_S,
                 end_day - first_day)
    days = range(int(first_day), int(end_day))
    parts = [_day_jobs(m, cat, seed, d, mean_rate) for d in days]
    job_keys = [k for k in parts[0] if k != "task_rt"]
    jobs = {k: np.concatenate([p[k] for p in parts]) for k in job_keys}
    task_rt = np.concatenate([p["task_rt"] for p in parts])
    keep = (jobs["submit"] >= start_s) & (jobs["submit"] < end_s)
    submitted = int(keep.sum()), int(jobs["ntasks"][keep].sum())
    if whole_jobs and jobs["submit"].size:
        first = np.cumsum(jobs["ntasks"]) - jobs["ntasks"]
        job_end = jobs["submit"] + np.maximum.reduceat(task_rt, first)
        keep &= job_end <= end_s
    task_keep = np.repeat(keep, jobs["ntasks"])
    jobs = {k: (v[keep] if v.shape == keep.shape else v) for k, v in jobs.items()}
    task_rt = task_rt[task_keep]
    adhoc_ids = np.sort(jobs.pop("adhoc_ids"))
    adhoc_ids = adhoc_ids[np.isin(adhoc_ids, jobs["job_id"])]
    code = jobs["name_code"]
    is_adhoc = code < 0
    code[is_adhoc] = cat.size + np.searchsorted(adhoc_ids, jobs["job_id"][is_adhoc])
    job_names = np.concatenate([c.numbered(f"{m.name}-p", np.arange(cat.size)),
                                c.numbered(f"{m.name}-adhoc-", adhoc_ids, 6)])
    frame = c.expand_jobs(
        {
            "job_id": jobs["job_id"],
            "submit_s": jobs["submit"],
            "cpu": jobs["cpu"],
            "mem_gib": jobs["mem"],
            "user": c.labels("u", jobs["user"]),
            "job_name": pd.Categorical.from_codes(code, categories=job_names),
            "priority": jobs["priority"],
        },
        jobs["ntasks"],
        {"runtime_s": task_rt},
    )
    n_expected = expected_jobs(mean_rate, m, start_s, duration)
    meta = {
        "programs": cat.size,
        "users": cat.n_users,
        "mean_tasks_per_job": cat.mean_tasks_per_job,
        # both submitted in the window, before the whole-job cut
        "expected_jobs": n_expected,
        "expected_tasks": n_expected * cat.mean_tasks_per_job,
        "whole_jobs": bool(whole_jobs),
        "cut_jobs": submitted[0] - int(jobs["job_id"].size),
        "cut_tasks": submitted[1] - int(jobs["ntasks"].sum()),
    }
    return frame, meta
