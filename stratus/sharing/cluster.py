"""A shared cloud cluster (paper 004, Mehboob, Bashir, Zink, Irwin, ICPE 2023): N reserved
VMs shared by many users, overflow to on-demand, under one of 004's provisioning policies.

The policies are waiting policies of the reserved-pool engine (stratus.waiting.pool), under
other names (004 §4.1, Fig. 4; spec B.2):

* lift-and-shift (§4.1.1) = AJW: every job waits for reserved capacity;
* cloud bursting without waiting (§4.1.2) = NJW: reserved if it fits now, else on-demand;
* cloud bursting with waiting (§4.1.2, §5: t = 3 min, b = 24 h) = compound LJW + AJW-T:
  a short job never waits, a long one queues and leaves for on-demand at b.

One strict FCFS queue without backfilling (004 §2.3, §5): the pool runs non-work-conserving.
Reserved capacity is either one pool of N x vm_cores cores (SWF "pool mode", a rigid job
needs its processors at once) or N VMs a job must fit inside ("node mode", best-fit, 004 §5).
This module turns a pool run into 004's bill and per-job, per-user numbers; the pool
engine owns the queue and time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from stratus.base.errors import ConfigError
from stratus.pricing.catalog_files import get_catalog
from stratus.traces.schema import source_ids
from stratus.waiting.bill import smallest_vm_costs
from stratus.waiting.pool import PoolRun, PoolSpec, WaitingPolicy, simulate, steady_mask

POLICIES = ("lift-and-shift", "burst-nowait", "burst-wait")
#: the waiting policy of the pool engine each 004 policy is (spec B.2)
WAITING_NAME = {"lift-and-shift": "ajw", "burst-nowait": "njw", "burst-wait": "compound"}
PRICINGS = ("socialist", "capitalist")
SHORT_JOBS = ("reserved-first", "ondemand")
OD_SIZINGS = ("exact", "m5")
MODES = ("pool", "node")
#: 004 §5: "relative price of fixed reserved resources to be 60% that of on-demand"
DEFAULT_RATIO = 0.6
DEFAULT_B = 86_400.0  # 004 §5: jobs wait at most 24 hours
DEFAULT_T = 180.0  # 004 §5: jobs of 3 minutes or less never wait


@dataclass(frozen=True)
class Workload:
    """Jobs in queue order (submit, then job id): one rigid job per row. ``user`` codes
    index ``users``. ``t0`` and ``period_end`` fix the horizon (spec B.1): a subset of the
    users (defection, flying solo) keeps the full workload's, so reserved VMs are paid over
    the same period whoever is left."""

    job_id: np.ndarray
    submit: np.ndarray
    runtime: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    user: np.ndarray  # int codes
    users: tuple[str, ...]
    t0: float
    period_end: float
    name: str = ""
    source_job_id: np.ndarray | None = None  # the source's ids, when text (traces/schema.py)

    @property
    def n(self) -> int:
        return len(self.submit)

    def subset(self, mask: np.ndarray) -> Workload:
        return replace(self, job_id=self.job_id[mask], submit=self.submit[mask],
                       runtime=self.runtime[mask], cpu=self.cpu[mask], mem=self.mem[mask],
                       user=self.user[mask],
                       source_job_id=None if self.source_job_id is None
                       else self.source_job_id[mask])

    def job_label(self, j: int) -> str:
        """Job ``j`` as the source names it."""
        return repr(self.source_job_id[j]) if self.source_job_id is not None \
            else str(self.job_id[j])

    def of_users(self, codes) -> Workload:
        return self.subset(np.isin(self.user, np.asarray(list(codes), dtype=np.int64)))


def workload_from_frame(frame, name: str = "") -> Workload:
    """One rigid job per ``job_id``: all its rows start together (an SWF job is one row;
    a multi-task job of a synthetic trace needs the sum of its tasks' cores and memory for
    its longest task's runtime). Runtimes under 1 s count as 1 s (spec B.2 wait/rt floor)."""
    if len(frame) == 0:
        raise ConfigError(f"trace {name or ''}: no jobs to share a cluster over".strip())
    g = frame.groupby("job_id", sort=False)
    if g.ngroups != len(frame):
        agg = g.agg(submit_s=("submit_s", "min"), runtime_s=("runtime_s", "max"),
                    cpu=("cpu", "sum"), mem_gib=("mem_gib", "sum"), user=("user", "first"))
        agg = agg.reset_index()
    else:
        agg = frame[["job_id", "submit_s", "runtime_s", "cpu", "mem_gib", "user"]]
    submit = agg["submit_s"].to_numpy(np.float64)
    job = agg["job_id"].to_numpy()
    order = np.lexsort((job, submit))
    users, codes = np.unique(agg["user"].astype(str).to_numpy(), return_inverse=True)
    submit = submit[order]
    return Workload(job_id=job[order], submit=submit,
                    runtime=np.maximum(agg["runtime_s"].to_numpy(np.float64)[order], 1.0),
                    cpu=agg["cpu"].to_numpy(np.float64)[order],
                    mem=agg["mem_gib"].to_numpy(np.float64)[order],
                    user=codes.astype(np.int64)[order], users=tuple(str(u) for u in users),
                    t0=float(submit[0]), period_end=float(submit[-1]), name=name,
                    source_job_id=source_ids(frame, job[order]))


@dataclass(frozen=True)
class Cluster:
    """The shared cluster's shape and prices (004 §5; spec B.1)."""

    policy: str = "burst-wait"
    reserved: int = 0  # N: VMs (node mode) or cores / vm_cores (pool mode)
    mode: str = "pool"
    vm: str = "m5.16xlarge"  # node mode's VM
    vm_cores: float = 1.0  # pool mode: cores per reserved unit
    ratio: float = DEFAULT_RATIO  # reserved price / on-demand price
    od_sizing: str = "exact"
    b: float = DEFAULT_B
    t: float = DEFAULT_T
    short_jobs: str = "reserved-first"
    placement: str = "best-fit"

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ConfigError(f"--policy takes {', '.join(POLICIES)}, got {self.policy!r}")
        if not (isinstance(self.reserved, (int, np.integer)) and 0 <= self.reserved <= 1_000_000):
            raise ConfigError(f"--reserved takes a whole number from 0 to 1,000,000, got "
                              f"{self.reserved!r}")
        if self.mode not in MODES:
            raise ConfigError(f"--mode takes pool or node, got {self.mode!r}")
        if not (0 < self.ratio <= 10 and math.isfinite(self.ratio)):
            raise ConfigError(f"--reserved-ratio takes a number in (0, 10], got {self.ratio}")
        if not (self.vm_cores > 0 and math.isfinite(self.vm_cores) and self.vm_cores <= 1e6):
            raise ConfigError(f"--vm-cores takes a positive number, got {self.vm_cores}")
        if self.od_sizing not in OD_SIZINGS:
            raise ConfigError(f"--od-sizing takes exact or m5, got {self.od_sizing!r}")
        if self.short_jobs not in SHORT_JOBS:
            raise ConfigError(f"--short-jobs takes reserved-first or ondemand, got "
                              f"{self.short_jobs!r}")
        for key, v in (("--b", self.b), ("--t", self.t)):
            if not (v >= 0 and math.isfinite(v)):
                raise ConfigError(f"{key} takes a number of seconds >= 0, got {v}")
        if self.mode == "node":
            vm_type(self.vm)
        PoolSpec(0, 1.0, 1.0, placement=self.placement)  # checks --placement

    def with_reserved(self, n: int) -> Cluster:
        return replace(self, reserved=int(n))


def vm_type(name: str):
    cat = get_catalog("m5")
    for t in cat:
        if t.name == name:
            return t
    raise ConfigError(f"--vm takes an m5 type ({', '.join(t.name for t in cat)}), got {name!r}")


def od_core_hour() -> float:
    """On-demand $ per vCPU-hour of the m5 family (0.048, 004 §5; linear in size)."""
    return min(t.ondemand_hourly / t.vcpu for t in get_catalog("m5"))


def od_costs(w: Workload, c: Cluster) -> np.ndarray:
    """OD_j: job j alone on on-demand, per second (004 §5: the smallest m5 that fits it;
    ``exact``: cores x the per-core price, "price is proportional to their size")."""
    if c.od_sizing == "exact":
        return w.cpu * w.runtime * (od_core_hour() / 3600.0)
    mem = w.mem if c.mode == "node" else np.zeros_like(w.cpu)  # pool mode ignores memory
    return smallest_vm_costs(get_catalog("m5"), w.cpu, mem, w.runtime)


def unit_cores(c: Cluster) -> float:
    """Cores of one reserved unit (a VM in node mode, vm_cores in pool mode)."""
    return vm_type(c.vm).vcpu if c.mode == "node" else c.vm_cores


def reserved_core_hour(c: Cluster) -> float:
    """Reserved $ per core-hour: ratio x on-demand (004 §5); a node-mode VM at ratio x its
    own on-demand rate."""
    if c.mode == "node":
        t = vm_type(c.vm)
        return c.ratio * t.ondemand_hourly / t.vcpu
    return c.ratio * od_core_hour()


def pool_run(w: Workload, c: Cluster) -> PoolRun:
    """The pool engine's run of ``w`` under ``c``'s policy."""
    n = c.reserved
    if c.mode == "node":
        t = vm_type(c.vm)
        spec = PoolSpec(n, float(t.vcpu), float(t.mem_gib), placement=c.placement,
                        work_conserving=False)
        mem = w.mem
    else:  # one pool of N x vm_cores cores; memory is not modelled (spec B-16)
        spec = PoolSpec(1 if n > 0 else 0, float(max(n, 1) * c.vm_cores), 1.0,
                        placement=c.placement, work_conserving=False)
        mem = np.zeros_like(w.cpu)
    name = WAITING_NAME[c.policy]
    policy = WaitingPolicy(name, b=c.b if name == "compound" else 0.0,
                           t=c.t if name == "compound" else 0.0)
    short = w.runtime <= c.t if name == "compound" else None  # spec B.2: rt <= t is short
    return simulate(spec, policy, w.submit, w.runtime, w.cpu, mem, short,
                    short_first=c.short_jobs == "reserved-first", timer=True)


@dataclass
class ShareRun:
    """One policy at one N: per job where it ran and its wait, and the bill."""

    workload: Workload
    cluster: Cluster
    ondemand: np.ndarray  # bool: ran on-demand
    start: np.ndarray
    wait: np.ndarray
    never_fit: np.ndarray  # bool
    od_cost: np.ndarray  # OD_j
    t1: float  # horizon end
    reserved_cost: float
    ondemand_cost: float

    @property
    def total_cost(self) -> float:
        return self.reserved_cost + self.ondemand_cost

    @property
    def od_equivalent(self) -> float:
        return float(self.od_cost.sum())

    @property
    def normalized_price(self) -> float | None:
        """π = Ctot / Σ OD_j (004 §4.2.1, §6.1; spec B.2: the exact sum)."""
        od = self.od_equivalent
        return self.total_cost / od if od > 0 else None

    @property
    def reserved_core_seconds(self) -> np.ndarray:
        """Per job: c_j rt_j on reserved capacity, else 0."""
        return np.where(self.ondemand, 0.0, self.workload.cpu * self.workload.runtime)


def run(w: Workload, c: Cluster) -> ShareRun:
    """Simulate and bill: reserved cost over [T0, T1], T1 = max(period end, last
    completion) (spec B.1, B-6); on-demand jobs at OD_j."""
    od = od_costs(w, c)
    if w.n == 0:
        t1 = w.period_end
        res = c.reserved * unit_cores(c) * reserved_core_hour(c) * (t1 - w.t0) / 3600.0
        e = np.zeros(0)
        return ShareRun(w, c, e.astype(bool), e, e, e.astype(bool), od, t1, res, 0.0)
    r = pool_run(w, c)
    t1 = max(w.period_end, float((r.start + w.runtime).max()))
    reserved = c.reserved * unit_cores(c) * reserved_core_hour(c) * (t1 - w.t0) / 3600.0
    return ShareRun(w, c, r.cloud.copy(), r.start, r.wait, ~r.fits, od, t1, reserved,
                    float(od[r.cloud].sum()))


def per_user_wait(sr: ShareRun, metric: str = "ratio-of-means") -> np.ndarray:
    """Per user code: mean wait / mean runtime over the user's jobs (004 Fig. 8 "average
    waiting time ... average job run time"; spec B-8), or the mean of wait_j / rt_j
    (``mean-of-ratios``). NaN for a user with no jobs here."""
    w = sr.workload
    k = len(w.users)
    cnt = np.bincount(w.user, minlength=k).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        if metric == "mean-of-ratios":
            return np.bincount(w.user, sr.wait / w.runtime, minlength=k) / cnt
        mw = np.bincount(w.user, sr.wait, minlength=k) / cnt
        mr = np.bincount(w.user, w.runtime, minlength=k) / cnt
        return mw / mr


def summary(sr: ShareRun, steady: float = 0.0) -> dict:
    """004's per-run numbers (spec B.2, B.13). ``steady``: the mean wait leaves out the
    first and last fraction of jobs (the authors' trimming; default 0: all jobs, B-7)."""
    w, c = sr.workload, sr.cluster
    keep = steady_mask(w.n, steady)
    horizon_s = sr.t1 - w.t0
    cores = w.cpu * w.runtime
    cap = c.reserved * unit_cores(c) * horizon_s
    pi = sr.normalized_price
    return {
        "policy": c.policy, "reserved": c.reserved, "mode": c.mode,
        "reserved_cores": c.reserved * unit_cores(c), "ratio": c.ratio,
        "od_sizing": c.od_sizing, "b": c.b, "t": c.t, "short_jobs": c.short_jobs,
        "horizon_h": round(horizon_s / 3600.0, 6), "jobs": w.n,
        "users": int(len(np.unique(w.user))),
        "total_cost": round(sr.total_cost, 6), "reserved_cost": round(sr.reserved_cost, 6),
        "ondemand_cost": round(sr.ondemand_cost, 6),
        "od_equivalent": round(sr.od_equivalent, 6),
        "normalized_price": None if pi is None else round(pi, 9),
        "mean_wait_s": round(float(sr.wait[keep].mean()), 4) if keep.any() else 0.0,
        "steady_state": steady,
        "max_wait_s": round(float(sr.wait.max()), 4) if w.n else 0.0,
        "ondemand_jobs": int(sr.ondemand.sum()),
        "ondemand_frac_jobs": round(float(sr.ondemand.mean()), 6) if w.n else 0.0,
        "ondemand_frac_corehours": round(float(cores[sr.ondemand].sum() / cores.sum()), 6)
        if w.n and cores.sum() > 0 else 0.0,
        "reserved_util": round(float(sr.reserved_core_seconds.sum() / cap), 6) if cap > 0
        else None,
        "never_fit": int(sr.never_fit.sum()),
    }
