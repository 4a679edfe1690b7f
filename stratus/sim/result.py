"""The outcome of a replay: a summary (what ``--json`` prints) and tidy tables."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from stratus.base.resources import ALL_DIMS, DIMS
from stratus.sim.contracts import Reports, name_of
from stratus.sim.footprint import footprint_name
from stratus.sim.metrics import cheapest_unit_prices, fluid_lower_bound, percentile
from stratus.traces.schema import source_ids

if TYPE_CHECKING:
    from stratus.sim.accounting import Snapshot


def rounded(x: float, nd: int | None = None) -> float | None:
    """JSON-friendly number: ``nd`` decimals, or 10 significant digits (money)."""
    if x is None or not math.isfinite(float(x)):
        return None
    return round(float(x), nd) if nd is not None else float(f"{float(x):.10g}")


_r = rounded


@dataclass
class Bill:
    """A replay's bill as the result builds it from the ledger, for add-ons to amend
    (``stratus.sim.hooks.AddOn.bill``): ``total`` and ``by_market`` (dollars), the prices and
    markets the lower bounds may rent (``bound_prices``, ``bound_markets``; the run's by
    default), functions each bound goes through (``bounds``), and summary keys to add
    (``keys``, after ``faults``). ``start``, ``end``: the replay's first tick and end."""

    total: float
    by_market: dict
    ledger: object
    prices: object
    markets: tuple
    catalog: object
    names: tuple
    start: float
    end: float
    bound_prices: object = None
    bound_markets: tuple = ()
    bounds: list = field(default_factory=list)
    keys: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.bound_prices is None:
            self.bound_prices, self.bound_markets = self.prices, self.markets


@dataclass
class ReplayResult:
    summary: dict
    instances: pd.DataFrame
    tasks: pd.DataFrame
    jobs: pd.DataFrame
    audit: dict = field(default_factory=dict)  # per-interval logs when replayed with record=True

    def to_json(self) -> str:
        return json.dumps(self.summary, sort_keys=False)

    def __getitem__(self, key: str):
        return self.summary[key]

    def to_parquet(self, directory) -> list:
        """``instances.parquet``, ``tasks.parquet`` and ``jobs.parquet`` into ``directory``
        (created if need be), each written under a temporary name and renamed."""
        import os
        from pathlib import Path

        from stratus.base import tempnames

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        out = []
        for name, frame in (("instances", self.instances), ("tasks", self.tasks),
                            ("jobs", self.jobs)):
            path = d / f"{name}.parquet"
            tmp = tempnames.fresh(path)
            try:
                frame.to_parquet(tmp)
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
            out.append(path)
        return out

    @classmethod
    def build(cls, e, wall_seconds: float) -> ReplayResult:
        """The result of a finished replay, from the public state of its components:
        ``e.work`` and ``e.book`` (stratus.sim.taskbook), ``e.cloud`` (stratus.sim.cloud),
        ``e.acct`` (stratus.sim.accounting, through its snapshot), and the run's ``cfg``,
        ``trace``, ``scheduler``, ``estimator`` and end time ``now``."""
        work, book, cloud, acct = e.work, e.book, e.cloud, e.acct
        acc = acct.snapshot()
        names = e.cfg.catalog.dims  # (cpu, mem), or (cpu, mem, gpu) on a GPU catalog
        dims = len(names)
        instances, inst_seconds, provisioned, booting, allocated, cost_by_type, cost_by_market = \
            _instance_table(cloud.ledger, dims)
        # the bill, for the add-ons to amend (AddOn.bill: a savings plan's commitment, the
        # reserved instances' rates in the bounds, their summary keys)
        bill = Bill(float(sum(cost_by_type.values())), cost_by_market, cloud.ledger,
                    cloud.prices, cloud.markets, e.cfg.catalog, names,
                    e.start_s if e.start_s is not None else e.now, e.now)
        for hook in e.hooks.bill:
            hook(bill)
        total_cost = bill.total

        util = {d: (allocated[i] / provisioned[i] if provisioned[i] > 0 else math.nan)
                for i, d in enumerate(names)}
        constraining = max((v for v in util.values() if math.isfinite(v)), default=math.nan)
        constraining_dim = max(util, key=lambda d: util[d] if math.isfinite(util[d]) else -1.0)

        job_end = np.asarray(book.job_end, dtype=np.float64)
        job_lat = job_end - work.job_submit
        norm_lat = job_lat / np.maximum(work.job_maxrt, 1e-9)
        jobs = pd.DataFrame({"job_id": work.job_ids, "submit_s": work.job_submit,
                             "end_s": job_end, "longest_task_s": work.job_maxrt,
                             "normalized_latency": norm_lat})
        labels = source_ids(e.trace.frame, work.job_ids)
        if labels is not None:  # the source's own ids (traces/schema.py), beside ours
            jobs.insert(1, "source_job_id", labels)
        # lists converted by numpy first: pandas takes its slow path on long Python lists
        tasks = pd.DataFrame({"first_start_s": np.array(book.first_start, dtype=np.float64),
                              "finish_s": np.array(book.finish, dtype=np.float64),
                              "migrations": np.array(book.n_migrations, dtype=np.int64),
                              # the runtime estimate the task was placed with (seconds), and
                              # its migrations begun after it had run past that estimate
                              "estimate_s": np.array(book.est, dtype=np.float64),
                              "migrations_past_estimate": np.array(book.n_migrations_overrun,
                                                                   dtype=np.int64)})

        seg_tid = np.asarray(acc.seg_tid, dtype=np.int64)
        # from a flat stream of ints: much faster than converting a list of tuples
        all_reqs = np.fromiter(chain.from_iterable(work.req), np.int64, len(work.req) * dims)
        reqs = all_reqs.reshape(-1, dims)[seg_tid] if seg_tid.size else \
            np.zeros((0, dims), dtype=np.int64)
        seg_start = np.asarray(acc.seg_start, dtype=np.float64)
        seg_end = np.asarray(acc.seg_end, dtype=np.float64)
        t0 = min(acc.seg_start, default=0.0)
        t1 = max(acc.seg_end, default=0.0)
        prices = cloud.prices
        bprices, bmarkets = bill.bound_prices, bill.bound_markets  # what the bounds may rent
        rho_t, rho = cheapest_unit_prices(bprices, e.cfg.catalog, bmarkets, t0, t1)
        lower = fluid_lower_bound(seg_start, seg_end, reqs, rho_t, rho)
        int_stats: dict = {}
        lower_int, lower_int_note = integer_bound(seg_start, seg_end, reqs, bprices,
                                                  e.cfg.catalog, bmarkets, e.cfg.tick_s,
                                                  rho_t, rho, int_stats)
        for amend in bill.bounds:  # bounds on the bill without an add-on, made bounds with it
            lower, lower_int = amend(lower), amend(lower_int)

        # resource-time of tasks making progress (run segments), per dimension
        run_len = seg_end - seg_start
        progress = (reqs * run_len[:, None]).sum(axis=0) if seg_tid.size else np.zeros(dims)
        breakdown = _breakdown(acc, names, provisioned, booting, progress, constraining_dim)

        est = e.estimator
        summary = {
            "scheduler": name_of(e.scheduler),
            "trace": e.trace.name,
            "tasks": work.n,
            "tasks_completed": book.n_done,
            "total_cost_usd": _r(total_cost),
            "lower_bound_cost_usd": _r(lower),
            "lower_bound_integer_usd": _r(lower_int),
            "lower_bound_integer_stats": int_stats or None,
            "instance_hours": _r(inst_seconds / 3600.0, 4),
            "utilization": {**{d: _r(v, 4) for d, v in util.items()},
                            "constraining": _r(constraining, 4),
                            **_progress_utilization(acc, names, provisioned, progress)},
            "constraining_resource": constraining_dim,
            "spinup_share": _r(breakdown["spinup"], 4) if breakdown else None,
            "billed_breakdown": breakdown,
            "latency": {"p50": _r(percentile(norm_lat, 50), 3),
                        "p95": _r(percentile(norm_lat, 95), 3)},
            "instances_acquired": len(cloud.ledger),
            "migrations": acc.migrations,
            # Stratus §5.2 side note: migrated tasks move ~1.2 times on average
            "migrations_per_migrated_task": _r(
                acc.migrations / max(1, sum(1 for k in book.n_migrations if k)), 3),
            "migration_seconds": _r(acc.migration_seconds, 3),
            "migrations_aborted": acc.migrations_aborted,
            # decided but void before their transfer began (the task ended first, or an end
            # was revoked): why a migrator's own count can exceed ``migrations``
            "migrations_cancelled": acc.migrations_cancelled,
            "migration_footprint": footprint_name(e.cfg.migration_footprint),
            "revocations": cloud.revocations,
            "tasks_revoked": acc.tasks_revoked,
            "cost_by_type": {k: _r(v) for k, v in sorted(cost_by_type.items())},
            "cost_by_market": {k: _r(v) for k, v in sorted(cost_by_market.items())},
            "usage_by_family": usage_by_family(instances, e.cfg.catalog),
            "jobs": len(work.job_ids),
            "market": e.cfg.market,
            "estimator": est.name,
            "seed": e.cfg.seed,
            "tick_s": e.cfg.tick_s,
            "simulated_hours": _r((e.now - (work.submit_list[0] if work.n else 0.0)) / 3600.0,
                                  4),
            "wall_seconds": _r(wall_seconds, 3),
        }
        if lower_int_note:
            summary["lower_bound_integer_note"] = lower_int_note
        if cloud.faults is not None:  # only when asked for: a replay without is unchanged
            summary["faults"] = fault_summary(cloud, acc)
        summary.update(bill.keys)  # the add-ons' (only when asked for)
        err = est.error_summary()
        if err is not None:
            summary["estimator_warmup_jobs"] = est.warmup_jobs
            summary["estimator_error"] = {k: err[k] for k in ("jobs", "median_abs_log_ratio",
                                                              "within_factor_2") if k in err}
        if isinstance(e.scheduler, Reports):
            summary.update(e.scheduler.stats())
        audit = {}
        if acct.holds is not None:
            audit = {"holds": acct.holds, "migrations": acct.mig_log,
                     "segments": list(zip(acc.seg_tid, acct.seg_iid, acc.seg_start,
                                          acc.seg_end)),
                     "instances": {i.iid: i for i in cloud.released}, "req": work.req,
                     "prices": prices, "crashes": acct.crash_log,
                     "horizon": (e.start_s, e.now)}
        return cls(summary, instances, tasks, jobs, audit)


def usage_by_family(instances: pd.DataFrame, catalog) -> dict:
    """Per instance family: billed dollars, instance-hours and vCPU-hours (request to
    release, as billed), and the family's share of the billed vCPU-hours."""
    if instances.empty:
        return {}
    hours = (instances["released_s"] - instances["requested_s"]) / 3600.0
    per_type = pd.DataFrame({"type": instances["type"], "hours": hours,
                             "cost": instances["cost_usd"]}).groupby("type", sort=True).sum()
    out: dict[str, dict[str, float]] = {}
    for name, h, c in zip(per_type.index, per_type["hours"], per_type["cost"]):
        t = catalog[name]
        fam = out.setdefault(t.family or name.split(".")[0],
                             {"cost_usd": 0.0, "instance_hours": 0.0, "vcpu_hours": 0.0})
        fam["cost_usd"] += float(c)
        fam["instance_hours"] += float(h)
        fam["vcpu_hours"] += float(h) * t.vcpu
    total = sum(f["vcpu_hours"] for f in out.values()) or 1.0
    return {k: {"cost_usd": _r(f["cost_usd"]), "instance_hours": _r(f["instance_hours"], 4),
                "vcpu_hours": _r(f["vcpu_hours"], 4),
                "vcpu_hours_share": _r(f["vcpu_hours"] / total, 4)}
            for k, f in sorted(out.items())}


def fault_summary(cloud, acc: Snapshot) -> dict:
    """What the cloud's own faults (stratus.sim.faults) did to a replay: crashes and the work
    they lost (docs/decisions.md defines lost_usd), and requests that could not be filled:
    all of them (ice_failures), and those that started a shortage (ice_shortages; the rest
    asked for a type already short)."""
    return {
        "spec": cloud.faults.spec(),
        "crashes": cloud.crashes,
        "tasks_restarted": acc.crash_restarts,
        "lost_task_seconds": _r(acc.lost_task_s, 3),
        "lost_core_seconds": _r(acc.lost_core_s, 3),
        "lost_usd": _r(acc.lost_usd),
        "ice_failures": cloud.ice_failures,
        "ice_shortages": cloud.ice_shortages,
        "ice_tasks_returned": acc.ice_returned,
        "ice_types_failed": dict(sorted(_count(n for _, n, _ in cloud.failed_requests).items())),
    }


def _count(names) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for n in names:
        out[n] += 1
    return out


def integer_bound(starts, ends, reqs, prices, catalog, markets, slot_s, rho_t, rho,
                  stats: dict | None = None) -> tuple[float | None, str | None]:
    """The integer lower bound (stratus.sim.intbound), or None and why: OR-Tools is an optional
    extra, and a replay must not fail for want of it."""
    from stratus.sim.intbound import integer_lower_bound, ortools_missing

    why = ortools_missing()
    if why:
        return None, why
    try:
        return integer_lower_bound(starts, ends, reqs, prices, catalog, markets, slot_s,
                                   rho_t, rho, stats=stats), None
    except RuntimeError as exc:  # a solver that did not prove optimality
        return None, f"integer bound not computed: {exc}"


INSTANCE_COLUMNS = ["iid", "type", "market", "requested_s", "ready_s", "released_s", "cost_usd",
                    "tasks_hosted", *(f"util_{d}" for d in DIMS)]


def instance_columns(dims: int) -> list[str]:
    """The instance table's columns for vectors of ``dims`` dimensions (INSTANCE_COLUMNS
    for the default two)."""
    return INSTANCE_COLUMNS[:-len(DIMS)] + [f"util_{d}" for d in ALL_DIMS[:dims]]


def _running_sum(x: np.ndarray) -> np.ndarray:
    """Sums down axis 0 added one row at a time from zero, as a Python loop of ``+=`` would
    (an accumulate, unlike ``sum``'s pairwise order, rounds exactly the same)."""
    start = np.zeros((1, *x.shape[1:]))
    return np.add.accumulate(np.concatenate([start, x]), axis=0)[-1]


def _instance_table(led, dims: int):
    """Per-instance rows (by instance id) and the totals over instances, in release order
    (the ledger's order)."""
    n = len(led)
    if not n:
        table = pd.DataFrame([], columns=instance_columns(dims))
        return table, 0.0, np.zeros(dims), np.zeros(dims), np.zeros(dims), {}, {}
    requested = np.asarray(led.requested, dtype=np.float64)
    released = np.asarray(led.released, dtype=np.float64)
    ready = np.asarray(led.ready, dtype=np.float64)
    cost = np.asarray(led.cost, dtype=np.float64)
    tcode = np.asarray(led.type_code, dtype=np.int64)
    mcode = np.asarray(led.market_code, dtype=np.int64)
    caps = np.array([t.capacity for t in led.types], dtype=np.float64).reshape(-1, dims)
    cap = caps[tcode]
    used = np.asarray(led.used, dtype=np.float64).reshape(n, dims)
    life = released - requested
    up = np.where(np.isnan(ready), released, ready)
    # totals as the loop over released instances they replace added them up
    inst_seconds = float(_running_sum(life))
    provisioned = _running_sum(cap * life[:, None])
    booting = _running_sum(cap * (np.minimum(up, released) - requested)[:, None])
    allocated = _running_sum(used)
    cost_by_type: dict[str, float] = defaultdict(float)
    cost_by_market: dict[str, float] = defaultdict(float)
    type_names = [t.name for t in led.types]
    for t, m, c in zip(tcode.tolist(), mcode.tolist(), cost.tolist()):
        cost_by_type[type_names[t]] += c
        cost_by_market[led.markets[m]] += c
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        util = np.where(life[:, None] > 0, used / cap / life[:, None], math.nan)
    order = np.argsort(np.asarray(led.iid, dtype=np.int64), kind="stable")
    names = np.array(type_names, dtype=object)[tcode]
    markets = np.array(led.markets, dtype=object)[mcode]
    table = pd.DataFrame(dict(zip(instance_columns(dims), (
        np.asarray(led.iid, dtype=np.int64)[order], names[order], markets[order],
        requested[order], ready[order], released[order], cost[order],
        np.asarray(led.hosted, dtype=np.int64)[order],
        *(util[order, k] for k in range(dims))))))
    return table, inst_seconds, provisioned, booting, allocated, cost_by_type, cost_by_market


def _progress_utilization(acc: Snapshot, names, provisioned: np.ndarray,
                          progress: np.ndarray) -> dict:
    """Progress-based utilization: resource-time of tasks making progress, plus tasks in
    transfer counted once (on their source), over billed resource-time. Unlike the
    allocation figure it does not count a migrating task twice, and a destination's
    reservation is waste. ``progress`` is the largest over dimensions, as ``constraining``."""
    vals = {}
    for i, d in enumerate(names):
        num = progress[i] + acc.transfer[i]
        vals[f"progress_{d}"] = num / provisioned[i] if provisioned[i] > 0 else math.nan
    finite = [v for v in vals.values() if math.isfinite(v)]
    per_inst = acc.fullest / provisioned[0] if provisioned[0] > 0 else math.nan
    return {"progress": _r(max(finite), 4) if finite else None,
            **{k: _r(v, 4) for k, v in vals.items()},
            "per_instance_constraining": _r(per_inst, 4)}


def _breakdown(acc: Snapshot, names, provisioned: np.ndarray, booting: np.ndarray,
               progress: np.ndarray, dim: str) -> dict:
    """Where the billed resource-time of the constraining dimension went, as shares that sum
    to 1: tasks making progress; tasks in transfer, on the source and on the destination;
    instances booting (spin-up); and idle capacity on ready instances, by the instance's
    state at the time (see Accounting.touch): on an instance at least half used in some
    dimension, room left in its fullest dimension (fragmentation) or capacity of another
    dimension its tasks' shape leaves unused (shape); on an instance below half in every
    dimension, holding one task or several (tails)."""
    i = names.index(dim) if dim in names else 0
    total = provisioned[i]
    if not total > 0:
        return {}
    parts = {
        "progress": progress[i],
        "transfer_source": acc.transfer[i],
        "transfer_destination": acc.transfer[i],
        "spinup": booting[i],
        "idle_fragmentation": acc.idle_fragmentation[i],
        "idle_shape": acc.idle_shape[i],
        "idle_low_one_task": acc.idle_low_one_task[i],
        "idle_low_several_tasks": acc.idle_low_several_tasks[i],
    }
    return {"resource": names[i], **{k: _r(v / total, 4) for k, v in parts.items()}}
