"""The outcome of a replay: a summary (what ``--json`` prints) and tidy tables."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from stratus.footprint import footprint_name
from stratus.metrics import cheapest_unit_prices, fluid_lower_bound, percentile
from stratus.resources import DIMS

if TYPE_CHECKING:
    from stratus.engine import Engine


def _r(x: float, nd: int | None = None) -> float | None:
    """JSON-friendly number: ``nd`` decimals, or 10 significant digits (money)."""
    if x is None or not math.isfinite(float(x)):
        return None
    return round(float(x), nd) if nd is not None else float(f"{float(x):.10g}")


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

    @classmethod
    def build(cls, e: Engine, wall_seconds: float) -> ReplayResult:
        insts = e.released
        dims = len(DIMS)
        rows = []
        cost_by_type: dict[str, float] = defaultdict(float)
        cost_by_market: dict[str, float] = defaultdict(float)
        provisioned = np.zeros(dims)
        allocated = np.zeros(dims)
        booting = np.zeros(dims)
        inst_seconds = 0.0
        for inst in insts:
            life = inst.released_at - inst.requested_at
            inst_seconds += life
            cap = np.asarray(inst.itype.capacity, dtype=np.float64)
            provisioned += cap * life
            up = inst.ready_at if inst.ready_at is not None else inst.released_at
            booting += cap * (min(up, inst.released_at) - inst.requested_at)
            allocated += np.asarray(inst._used_integral)
            cost_by_type[inst.itype.name] += inst.cost
            cost_by_market[inst.market] += inst.cost
            rows.append((inst.iid, inst.itype.name, inst.market, inst.requested_at,
                         inst.ready_at if inst.ready_at is not None else math.nan,
                         inst.released_at, inst.cost, inst.hosted,
                         *(u / c / life if life > 0 else math.nan
                           for u, c in zip(inst._used_integral, inst.itype.capacity))))
        rows.sort()
        instances = pd.DataFrame(rows, columns=[
            "iid", "type", "market", "requested_s", "ready_s", "released_s", "cost_usd",
            "tasks_hosted", *(f"util_{d}" for d in DIMS)])
        total_cost = float(sum(cost_by_type.values()))

        util = {d: (allocated[i] / provisioned[i] if provisioned[i] > 0 else math.nan)
                for i, d in enumerate(DIMS)}
        constraining = max((v for v in util.values() if math.isfinite(v)), default=math.nan)
        constraining_dim = max(util, key=lambda d: util[d] if math.isfinite(util[d]) else -1.0)

        job_end = np.asarray(e.job_end, dtype=np.float64)
        job_lat = job_end - e.job_submit
        norm_lat = job_lat / np.maximum(e.job_maxrt, 1e-9)
        jobs = pd.DataFrame({"job_id": e._job_ids, "submit_s": e.job_submit, "end_s": job_end,
                             "longest_task_s": e.job_maxrt, "normalized_latency": norm_lat})
        tasks = pd.DataFrame({"first_start_s": e.first_start, "finish_s": e.finish,
                              "migrations": e.n_migrations})

        seg_tid = np.asarray(e.seg_tid, dtype=np.int64)
        reqs = np.asarray(e._req, dtype=np.int64).reshape(-1, dims)[seg_tid] if seg_tid.size else \
            np.zeros((0, dims), dtype=np.int64)
        t0 = min(e.seg_start, default=0.0)
        t1 = max(e.seg_end, default=0.0)
        rho_t, rho = cheapest_unit_prices(e.prices, e.cfg.catalog, e.markets, t0, t1)
        lower = fluid_lower_bound(np.asarray(e.seg_start), np.asarray(e.seg_end), reqs, rho_t, rho)

        # resource-time of tasks making progress (run segments), per dimension
        run_len = np.asarray(e.seg_end) - np.asarray(e.seg_start)
        progress = (reqs * run_len[:, None]).sum(axis=0) if seg_tid.size else np.zeros(dims)
        breakdown = _breakdown(e, provisioned, booting, progress, constraining_dim)

        est = e.estimator
        summary = {
            "scheduler": getattr(e.scheduler, "name", type(e.scheduler).__name__),
            "trace": e.trace.name,
            "tasks": e.n,
            "tasks_completed": e.n_done,
            "total_cost_usd": _r(total_cost),
            "lower_bound_cost_usd": _r(lower),
            "instance_hours": _r(inst_seconds / 3600.0, 4),
            "utilization": {**{d: _r(v, 4) for d, v in util.items()},
                            "constraining": _r(constraining, 4),
                            **_progress_utilization(e, provisioned, progress)},
            "constraining_resource": constraining_dim,
            "spinup_share": _r(breakdown["spinup"], 4) if breakdown else None,
            "billed_breakdown": breakdown,
            "latency": {"p50": _r(percentile(norm_lat, 50), 3),
                        "p95": _r(percentile(norm_lat, 95), 3)},
            "instances_acquired": len(insts),
            "migrations": e.migrations,
            # Stratus §5.2 side note: migrated tasks move ~1.2 times on average
            "migrations_per_migrated_task": _r(
                e.migrations / max(1, sum(1 for k in e.n_migrations if k)), 3),
            "migration_seconds": _r(e.migration_seconds, 3),
            "migrations_aborted": e.aborted_migrations,
            "migration_footprint": footprint_name(e.cfg.migration_footprint),
            "revocations": e.revocations,
            "tasks_revoked": e.tasks_revoked,
            "cost_by_type": {k: _r(v) for k, v in sorted(cost_by_type.items())},
            "cost_by_market": {k: _r(v) for k, v in sorted(cost_by_market.items())},
            "jobs": len(e._job_ids),
            "market": e.cfg.market,
            "estimator": est.name,
            "seed": e.cfg.seed,
            "tick_s": e.cfg.tick_s,
            "simulated_hours": _r((e.now - (e._submit_list[0] if e.n else 0.0)) / 3600.0, 4),
            "wall_seconds": _r(wall_seconds, 3),
        }
        if hasattr(est, "error_summary"):
            err = est.error_summary()
            summary["estimator_warmup_jobs"] = getattr(est, "warmup_jobs", 0)
            summary["estimator_error"] = {k: err[k] for k in ("jobs", "median_abs_log_ratio",
                                                              "within_factor_2") if k in err}
        extra = getattr(e.scheduler, "stats", None)
        if callable(extra):
            summary.update(extra())
        audit = {}
        if e.holds is not None:
            audit = {"holds": e.holds, "migrations": e.mig_log,
                     "segments": list(zip(e.seg_tid, e.seg_iid, e.seg_start, e.seg_end)),
                     "instances": {i.iid: i for i in insts}, "req": e._req, "prices": e.prices}
        return cls(summary, instances, tasks, jobs, audit)


def _progress_utilization(e: Engine, provisioned: np.ndarray, progress: np.ndarray) -> dict:
    """Progress-based utilization: resource-time of tasks making progress, plus tasks in
    transfer counted once (on their source), over billed resource-time. Unlike the
    allocation figure it does not count a migrating task twice, and a destination's
    reservation is waste. ``progress`` is the largest over dimensions, as ``constraining``."""
    vals = {}
    for i, d in enumerate(DIMS):
        num = progress[i] + e.transfer_rt[i]
        vals[f"progress_{d}"] = num / provisioned[i] if provisioned[i] > 0 else math.nan
    finite = [v for v in vals.values() if math.isfinite(v)]
    per_inst = e._fullest_rt / provisioned[0] if provisioned[0] > 0 else math.nan
    return {"progress": _r(max(finite), 4) if finite else None,
            **{k: _r(v, 4) for k, v in vals.items()},
            "per_instance_constraining": _r(per_inst, 4)}


def _breakdown(e: Engine, provisioned: np.ndarray, booting: np.ndarray, progress: np.ndarray,
               dim: str) -> dict:
    """Where the billed resource-time of the constraining dimension went, as shares that sum
    to 1: tasks making progress; tasks in transfer, on the source and on the destination;
    instances booting (spin-up); and idle capacity on ready instances, by the instance's
    state at the time (see Engine._touch): on an instance at least half used in some
    dimension, room left in its fullest dimension (fragmentation) or capacity of another
    dimension its tasks' shape leaves unused (shape); on an instance below half in every
    dimension, holding one task or several (tails)."""
    i = DIMS.index(dim) if dim in DIMS else 0
    total = provisioned[i]
    if not total > 0:
        return {}
    parts = {
        "progress": progress[i],
        "transfer_source": e.transfer_rt[i],
        "transfer_destination": e.transfer_rt[i],
        "spinup": booting[i],
        "idle_fragmentation": e._idle_frag[i],
        "idle_shape": e._idle_shape[i],
        "idle_low_one_task": e._idle_single[i],
        "idle_low_several_tasks": e._idle_low[i],
    }
    return {"resource": DIMS[i], **{k: _r(v / total, 4) for k, v in parts.items()}}
