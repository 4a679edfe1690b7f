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


def generate(m: ProgramModel, hours: float, seed: int, scale: float,
             start_s: float) -> tuple[pd.DataFrame, dict]:
    """The task frame of one window of the workload, and facts for the trace's meta."""
    c.check_common(hours, seed, scale, start_s)
    rng_cat, rng_jobs = c.substreams(seed, 2)
    cat = Catalog(rng_cat, m, scale)
    duration = hours * 3600.0
    mean_rate = m.tasks_per_day * scale / cat.mean_tasks_per_job / c.DAY_S
    submit = c.diurnal_arrivals(rng_jobs, mean_rate, start_s, duration, m.peak_to_trough,
                                m.peak_hour)
    n = submit.size
    prog = rng_jobs.choice(cat.size, size=n, p=cat.prob)
    attrs = {k: v[prog] for k, v in cat.attrs.items()}
    adhoc = np.flatnonzero(rng_jobs.random(n) < m.adhoc_share)
    one_off = _draw_programs(rng_jobs, m,
                             rng_jobs.choice(len(m.classes), size=adhoc.size,
                                             p=cat.class_shares),
                             cat.n_users)
    for k, v in one_off.items():
        attrs[k][adhoc] = v
    name_code = prog.copy()
    name_code[adhoc] = cat.size + np.arange(adhoc.size)
    job_names = np.concatenate([c.numbered(f"{m.name}-p", np.arange(cat.size)),
                                c.numbered(f"{m.name}-adhoc-", adhoc, 6)])
    job_rt = c.bounded_lognormal(rng_jobs, attrs["runtime"], m.job_sigma, m.min_runtime_s,
                                 c.MAX_RUNTIME_S)
    ntasks = attrs["ntasks"]
    task_rt = c.bounded_lognormal(rng_jobs, np.repeat(job_rt, ntasks), m.task_sigma,
                                  m.min_runtime_s, c.MAX_RUNTIME_S)
    frame = c.expand_jobs(
        {
            "job_id": np.arange(n, dtype=np.int64),
            "submit_s": submit,
            "cpu": attrs["cpu"],
            "mem_gib": attrs["mem"],
            "user": c.labels("u", attrs["user"]),
            "job_name": pd.Categorical.from_codes(name_code, categories=job_names),
            "priority": attrs["priority"],
        },
        ntasks,
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
