"""The job model of paper 001 (Islam et al., QoPS/VQoPS/DVQoPS) §3, as the spec
(`qos-and-sharing.md` A.1) reads it: deadlines, urgency, prices, the value function,
duplication for load scaling and trace-estimate hygiene.

Every random draw comes from a seeded ``numpy.random.Generator``: the same inputs and seed
give the same workload.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from stratus.base.errors import ConfigError

DUP_STREAM = 0xD0B1    # the duplication draw's stream
URGENT_STREAM = 0x0A6E  # the urgent marking's stream


@dataclass
class Workload:
    """One seeded experiment's jobs in arrival order (submit, job id; a copy after its
    original). Plain lists: the event loop reads them element by element."""

    submit: list[float]
    est: list[float]       # e_j, what the scheduler sees
    rt: list[float]        # actual runtime (<= est under kill semantics)
    procs: list[int]
    deadline: list[float]  # D_j, absolute
    urgent: list[bool]
    vmax: list[float]      # the charged maximum (actual runtime unless --charge-basis estimate)
    vhat: list[float]      # the scheduler's maximum r_j p_j e_j (A.1 "Scheduler-side valuation")
    size: list[float]      # p_j e_j, processor-seconds (001 §4.2.1)
    job_id: list[int]      # the trace's job id (a copy keeps its original's)
    copy: list[bool]
    P: int
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.submit)


def value(c: float, vmax: float, s: float, e: float, d: float) -> float:
    """001 §3 and Fig. 2 (spec A.1, Ambiguity A-2): full value until the earliest possible
    completion s + e, then linear to 0 at the deadline d, 0 after."""
    f = s + e
    if c <= f:
        return vmax
    if c >= d:
        return 0.0
    return vmax * (d - c) / (d - f)


def build_workload(submit, runtime, procs, requested, job_ids, *, P: int,
                   estimates: str = "exact", overrun: str = "kill", slack: float = 5.0,
                   dup_frac: float = 0.0, urgent_frac: float = 0.5, urgent_cost: float = 10.0,
                   base_rate: float = 0.1, charge_basis: str = "actual",
                   deadline_basis: str = "estimate", dup_copies_urgency: bool = False,
                   seed: int = 0, source: str = "trace") -> Workload:
    """The experiment's jobs (spec A.1). ``requested`` is the per-job requested time (SWF
    field 9) or None when the trace has none."""
    submit = np.asarray(submit, dtype=np.float64)
    rt = np.maximum(np.asarray(runtime, dtype=np.float64), 1.0)  # SWF 0 -> 1 s (A.1)
    procs = np.asarray(procs, dtype=np.float64)
    ids = np.asarray(job_ids, dtype=np.int64)
    req = None if requested is None else np.asarray(requested, dtype=np.float64)
    if (estimates == "trace" or deadline_basis == "requested") and req is None:
        what = "--estimates trace" if estimates == "trace" else "--deadline-basis requested"
        raise ConfigError(f"{what} needs the requested time (SWF field 9) of every job, "
                          f"but {source} does not give one for every job")
    if len(submit) == 0:
        raise ConfigError(f"{source}: no jobs")
    order = np.lexsort((ids, submit))
    submit, rt, procs, ids = submit[order], rt[order], procs[order], ids[order]
    req = None if req is None else req[order]
    p_int = np.ceil(procs).astype(np.int64)
    keep = (p_int <= P) & (p_int >= 1)
    dropped = int((~keep).sum())
    submit, rt, p_int, ids = submit[keep], rt[keep], p_int[keep], ids[keep]
    req = None if req is None else req[keep]
    if len(submit) == 0:
        raise ConfigError(f"{source}: every job needs more than the {P} processors")
    killed = extended = 0
    if estimates == "exact":
        est = rt.copy()  # 001 §3 "Runtime Estimates", the first set
    else:
        est = np.maximum(req, 1.0)  # the second set: the user's requested time
        over = rt > est
        if overrun == "kill":  # the job is killed at its estimate
            killed = int(over.sum())
            rt = np.where(over, est, rt)
        else:
            extended = int(over.sum())
            est = np.where(over, rt, est)
    basis = est if deadline_basis == "estimate" else np.maximum(req, 1.0)
    n0 = len(submit)
    # 001 §3 "Job Submission Load": each job duplicated with probability d; d > 1 means
    # floor(d) sure copies plus one more with probability d - floor(d) (A.1)
    copies = np.zeros(n0, dtype=np.int64)
    if dup_frac > 0:
        u = np.random.default_rng([seed, DUP_STREAM]).random(n0)
        whole = math.floor(dup_frac)
        copies = whole + (u < dup_frac - whole).astype(np.int64)
    idx = np.repeat(np.arange(n0), copies + 1)
    is_copy = np.ones(len(idx), dtype=bool)
    first = np.concatenate(([0], np.cumsum(copies + 1)[:-1]))
    is_copy[first] = False
    n = len(idx)
    rng = np.random.default_rng([seed, URGENT_STREAM])
    urgent = np.zeros(n, dtype=bool)
    if dup_copies_urgency:  # A-9 variant: mark originals, copies inherit
        marked = np.zeros(n0, dtype=bool)
        marked[rng.choice(n0, int(round(urgent_frac * n0)), replace=False)] = True
        urgent = marked[idx]
    else:  # A-9 decision: exactly round(U n) among all jobs after duplication
        urgent[rng.choice(n, int(round(urgent_frac * n)), replace=False)] = True
    s, e, r, p = submit[idx], est[idx], rt[idx], p_int[idx]
    dl = s + slack * basis[idx]  # 001 §3 "Deadline Information": 5 x estimate
    rate = np.where(urgent, urgent_cost * base_rate, base_rate)  # 001 §3 "Urgency and Job Cost"
    vmax = rate * p * (r if charge_basis == "actual" else e)
    vhat = rate * p * e
    span = float(s.max() - s.min())
    load = float((p * r).sum() / (P * span)) if span > 0 else None
    info = {"jobs_in_trace": int(len(order)), "dropped_oversize": dropped,
            "jobs_before_duplication": int(n0), "duplicates": int(n - n0), "jobs": int(n),
            "urgent": int(urgent.sum()), "overrun_killed": killed,
            "overrun_extended": extended, "offered_load": load, "processors": int(P)}
    return Workload(s.tolist(), e.tolist(), r.tolist(), p.tolist(), dl.tolist(),
                    urgent.tolist(), vmax.tolist(), vhat.tolist(), (p * e).tolist(),
                    ids[idx].tolist(), is_copy.tolist(), int(P), info)
