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

from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import common as c


@dataclass(frozen=True)
class SizeClass:
    """Jobs with ``lo``..``hi`` tasks (P(n) ~ n**-alpha within) and their typical runtimes."""

    share: float  # fraction of jobs in this class
    lo: int
    hi: int
    alpha: float
    runtime_median_s: float  # median over programs of the typical task runtime
    runtime_sigma: float  # ln-sd over programs of the typical task runtime


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


def _draw_programs(rng: np.random.Generator, m: ProgramModel, cls: np.ndarray,
                   n_users: int) -> dict[str, np.ndarray]:
    """Attributes of programs (or one-off jobs) of the given size classes."""
    n = cls.size
    ntasks = np.ones(n, dtype=np.int64)
    rt_median = np.empty(n)
    rt_sigma = np.empty(n)
    for k, sc in enumerate(m.classes):  # a handful of classes, vectorised within each
        idx = np.flatnonzero(cls == k)
        values, probs = c.power_law_pmf(sc.lo, sc.hi, sc.alpha)
        ntasks[idx] = rng.choice(values, size=idx.size, p=probs)
        rt_median[idx] = sc.runtime_median_s
        rt_sigma[idx] = sc.runtime_sigma
    # Typical runtime: lognormal per class, kept a factor 2 inside the runtime bounds so runs
    # jittered around it can still land on both sides.
    runtime = c.bounded_lognormal(rng, rt_median, rt_sigma, 2 * m.min_runtime_s,
                                  c.MAX_RUNTIME_S / 2)
    cpu = c.bounded_lognormal(rng, m.cpu_median, m.cpu_sigma, *m.cpu_range, size=n)
    ratio = np.exp(np.log(m.gib_per_cpu_median) + m.gib_per_cpu_sigma * rng.standard_normal(n))
    mem = np.clip(cpu * ratio, *m.mem_range)
    return {
        "ntasks": ntasks,
        "runtime": runtime,
        "cpu": c.quantize(cpu, c.CPU_QUANTUM, c.CPU_QUANTUM, c.MAX_CPU),
        "mem": c.quantize(mem, c.MEM_QUANTUM_GIB, c.MEM_QUANTUM_GIB, c.MAX_MEM_GIB),
        "priority": rng.choice(np.asarray(m.priorities, dtype=np.int64), size=n,
                               p=np.asarray(m.priority_probs)),
        "user": rng.choice(n_users, size=n, p=c.zipf_weights(n_users, m.user_zipf)),
    }


class Catalog:
    """The programs of a cluster of the given scale and their popularity."""

    def __init__(self, rng: np.random.Generator, m: ProgramModel, scale: float) -> None:
        shares = np.array([sc.share for sc in m.classes])
        self.class_shares = shares / shares.sum()
        self.n_users = max(5, round(m.users * scale))
        # Programs per class in proportion to its share of jobs; at least 3 so a class is
        # never a single program.
        counts = np.maximum(3, np.round(self.class_shares * m.programs * scale)).astype(int)
        cls = np.repeat(np.arange(len(m.classes)), counts)
        self.prob = np.concatenate([s * c.zipf_weights(k, m.program_zipf)
                                    for s, k in zip(self.class_shares, counts, strict=True)])
        self.attrs = _draw_programs(rng, m, cls, self.n_users)
        self.size = cls.size
        # Expected tasks per job: catalog runs and one-off runs, per class.
        cat_mean = np.bincount(cls, weights=self.prob * self.attrs["ntasks"])
        pmf_mean = np.array([np.dot(*c.power_law_pmf(sc.lo, sc.hi, sc.alpha))
                             for sc in m.classes])
        self.mean_tasks_per_job = float(
            (1 - m.adhoc_share) * cat_mean.sum()
            + m.adhoc_share * np.dot(self.class_shares, pmf_mean))


def expected_jobs(mean_rate: float, m: ProgramModel, start_s: float, duration_s: float) -> float:
    """Integral of the sinusoidal job rate over the window."""
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
    submit = c.diurnal_arrivals(rng, mean_rate, day * c.DAY_S, c.DAY_S, m.peak_to_trough,
                                m.peak_hour)
    n = submit.size
    prog = rng.choice(cat.size, size=n, p=cat.prob)
    attrs = {k: v[prog] for k, v in cat.attrs.items()}
    adhoc = np.flatnonzero(rng.random(n) < m.adhoc_share)
    one_off = _draw_programs(rng, m, rng.choice(len(m.classes), size=adhoc.size,
                                                p=cat.class_shares), cat.n_users)
    for k, v in one_off.items():
        attrs[k][adhoc] = v
    job_id = day * DAY_ID_STRIDE + np.arange(n, dtype=np.int64)
    name_code = prog.astype(np.int64)
    name_code[adhoc] = -1 - np.arange(adhoc.size)  # one-offs: named after their job id below
    job_rt = c.bounded_lognormal(rng, attrs["runtime"], m.job_sigma, m.min_runtime_s,
                                 c.MAX_RUNTIME_S)
    task_rt = c.bounded_lognormal(rng, np.repeat(job_rt, attrs["ntasks"]), m.task_sigma,
                                  m.min_runtime_s, c.MAX_RUNTIME_S)
    return {"submit": submit, "job_id": job_id, "name_code": name_code, "adhoc_ids": job_id[adhoc],
            "task_rt": task_rt, **attrs}


def generate(m: ProgramModel, hours: float, seed: int, scale: float,
             start_s: float) -> tuple[pd.DataFrame, dict]:
    """The task frame of one window of the workload, and facts for the trace's meta."""
    c.check_common(hours, seed, scale, start_s)
    rng_cat = c.substreams(seed, 2)[0]
    cat = Catalog(rng_cat, m, scale)
    duration = hours * 3600.0
    end_s = start_s + duration
    mean_rate = m.tasks_per_day * scale / cat.mean_tasks_per_job / c.DAY_S
    days = range(int(np.floor(start_s / c.DAY_S)), int(np.ceil(end_s / c.DAY_S)))
    parts = [_day_jobs(m, cat, seed, d, mean_rate) for d in days]
    job_keys = [k for k in parts[0] if k != "task_rt"]
    jobs = {k: np.concatenate([p[k] for p in parts]) for k in job_keys}
    task_rt = np.concatenate([p["task_rt"] for p in parts])
    task_keep = np.repeat((jobs["submit"] >= start_s) & (jobs["submit"] < end_s), jobs["ntasks"])
    keep = (jobs["submit"] >= start_s) & (jobs["submit"] < end_s)
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
    meta = {
        "programs": cat.size,
        "users": cat.n_users,
        "mean_tasks_per_job": cat.mean_tasks_per_job,
        "expected_tasks": expected_jobs(mean_rate, m, start_s, duration)
        * cat.mean_tasks_per_job,
    }
    return frame, meta
