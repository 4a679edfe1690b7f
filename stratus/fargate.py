"""AWS Fargate as the Stratus paper prices it (§4.3): a cost model, no instances, no engine.

Every task runs as its own Fargate task from the moment it is submitted, for its runtime,
and is billed per second for the vCPU and memory of the smallest Fargate task size that
holds its request, at the May 2018 prices ($0.0506 per vCPU-hour, $0.0127 per GB-hour).

Task sizes (2018, the five CPU values Fargate offered then; 8 and 16 vCPU came in 2022
with platform 1.4.0), memory in GB = 1024 MiB (AWS ECS developer guide, "Task CPU and
memory"; https://docs.aws.amazon.com/AmazonECS/latest/userguide/task-cpu-memory-error.html):

    0.25 vCPU: 0.5, 1, 2 GB          2 vCPU: 4 to 16 GB in 1 GB steps
    0.5 vCPU:  1 to 4 GB, 1 GB steps  4 vCPU: 8 to 30 GB in 1 GB steps
    1 vCPU:    2 to 8 GB, 1 GB steps

A task larger than 4 vCPU or 30 GB fits no size: it is billed as k equal shares, k the
fewest that each fit a size (as if split into k Fargate tasks), each share rounded up to a
size. See docs/decisions.md, "Fargate as a cost model". Fargate has no GPUs: a trace with
a GPU request is refused, naming its rows (docs/decisions.md, "A GPU dimension").
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from stratus.base.errors import ConfigError
from stratus.base.resources import DIMS, SCALE, request_units
from stratus.sim.config import resolve
from stratus.sim.hooks import AddOn
from stratus.traces.schema import bad_rows, gpu_requests

VCPU_HOUR_USD = 0.0506  # May 2018 (Stratus §4.3)
GB_HOUR_USD = 0.0127


class _PlanNoted(AddOn):
    """The model's own claim on a savings plan: it bills at Fargate's prices and reports
    the plan as not modelled (``savings_plan_note``), so the plan is not refused as
    dropped; reserved instances and waiting policies, which it cannot take, are."""

    claims = ("savings_plan",)


def _sizes() -> list[tuple[float, float]]:
    out = [(0.25, m) for m in (0.5, 1, 2)]
    out += [(0.5, m) for m in range(1, 5)]
    out += [(1, m) for m in range(2, 9)]
    out += [(2, m) for m in range(4, 17)]
    out += [(4, m) for m in range(8, 31)]
    return [(float(c), float(m)) for c, m in out]


SIZES: tuple[tuple[float, float], ...] = tuple(_sizes())
LARGEST = (4.0, 30.0)


def size_price(vcpu: float, gb: float) -> float:
    """$/h of one Fargate task of this size."""
    return vcpu * VCPU_HOUR_USD + gb * GB_HOUR_USD


def fargate_sizes(cpu_units: np.ndarray, mem_units: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per task (requests in milli-vCPU and MiB): the shares it is billed as, and the
    vCPU and GB of each share's Fargate size (the cheapest size that holds the share)."""
    cpu = np.asarray(cpu_units, dtype=np.int64)
    mem = np.asarray(mem_units, dtype=np.int64)
    big_c, big_m = (round(x * s) for x, s in zip(LARGEST, SCALE))
    shares = np.maximum(1, np.maximum(-(-cpu // big_c), -(-mem // big_m)))
    c = -(-cpu // shares)  # a share, rounded up to the unit: never less than asked
    m = -(-mem // shares)
    best = np.full(cpu.shape, np.inf)
    vcpu = np.zeros(cpu.shape)
    gb = np.zeros(cpu.shape)
    for sc, sm in SIZES:  # sizes are few (50): one vectorized pass each
        fits = (c <= round(sc * SCALE[0])) & (m <= round(sm * SCALE[1]))
        p = size_price(sc, sm)
        better = fits & (p < best)
        best[better] = p
        vcpu[better] = sc
        gb[better] = sm
    return shares, vcpu, gb


class FargateCostModel:
    """Bills a trace as Fargate would; ``replay`` gives a ReplayResult like the engine's."""

    name = "fargate"

    def replay(self, trace, cfg):
        from stratus.sim.metrics import cheapest_unit_prices, fluid_lower_bound, percentile
        from stratus.sim.result import ReplayResult, integer_bound
        from stratus.sim.result import rounded as _r

        wall0 = time.perf_counter()
        # the engine's resolution: the caller's config is never written
        cfg = resolve(cfg, (_PlanNoted(),))
        markets = cfg.markets
        f = trace.frame
        n = len(f)
        submit = f["submit_s"].to_numpy(dtype=np.float64)
        runtime = f["runtime_s"].to_numpy(dtype=np.float64)
        if n and not np.all(np.isfinite(runtime) & (runtime >= 0)):
            raise ConfigError("fargate: runtimes must be finite and non-negative")
        gpus = gpu_requests(f)
        if (gpus > 0).any():
            raise bad_rows(trace.name, f, gpus > 0, "task requests GPUs, and Fargate has none "
                            "(unrunnable there; drop GPU jobs to bill the rest)")
        # the catalog's dimensions, for the instance bounds (no GPU requests: a zero column)
        units = (request_units(f["cpu"], f["mem_gib"], gpus if cfg.catalog.has_gpus else None)
                 if n else np.zeros((0, len(cfg.catalog.dims)), np.int64))
        shares, vcpu, gb = fargate_sizes(units[:, 0], units[:, 1])
        rate = shares * (vcpu * VCPU_HOUR_USD + gb * GB_HOUR_USD)
        cost = rate * runtime / 3600.0
        total = float(cost.sum())
        end = submit + runtime

        # latency (the paper's reading: no cluster to wait for) from submit to the end
        job_ids = f["job_id"].to_numpy()
        uniq, job_idx = np.unique(job_ids, return_inverse=True)
        nj = len(uniq)
        job_submit = np.full(nj, np.inf)
        np.minimum.at(job_submit, job_idx, submit)
        job_end = np.full(nj, -np.inf)
        np.maximum.at(job_end, job_idx, end)
        job_maxrt = np.zeros(nj)
        np.maximum.at(job_maxrt, job_idx, runtime)
        norm_lat = (job_end - job_submit) / np.maximum(job_maxrt, 1e-9)

        # the instance bounds over the same run intervals, for reference (not Fargate's)
        run = runtime > 0
        s, e, reqs = submit[run], end[run], units[run]
        int_stats: dict = {}
        if s.size:
            rho_t, rho = cheapest_unit_prices(cfg.prices, cfg.catalog, markets, s.min(), e.max())
            lower = fluid_lower_bound(s, e, reqs, rho_t, rho)
            lower_int, note = integer_bound(s, e, reqs, cfg.prices, cfg.catalog, markets,
                                            cfg.tick_s, rho_t, rho, int_stats)
        else:
            lower, lower_int, note = 0.0, 0.0, None

        # utilization: requested over billed resource-time, per dimension
        billed = [(shares * vcpu * runtime).sum() * SCALE[0],
                  (shares * gb * runtime).sum() * SCALE[1]]
        used = [(units[:, d] * runtime).sum() for d in range(len(DIMS))]  # cpu, mem: no GPUs
        util = {d: (used[i] / billed[i] if billed[i] > 0 else math.nan)
                for i, d in enumerate(DIMS)}
        finite = {d: v for d, v in util.items() if math.isfinite(v)}
        constraining_dim = max(finite, key=finite.get) if finite else DIMS[0]
        oversized = int((shares > 1).sum())
        t_first = float(submit.min()) if n else 0.0
        summary = {
            "scheduler": self.name,
            "trace": trace.name,
            "tasks": n,
            "tasks_completed": n,
            "tasks_unfinished": 0,  # no capacity to wait for: every task runs
            "ended_early": None,
            "total_cost_usd": _r(total),
            "lower_bound_cost_usd": _r(lower),
            "lower_bound_integer_usd": _r(lower_int),
            "lower_bound_integer_stats": int_stats or None,
            "instance_hours": None,
            "utilization": {**{d: _r(v, 4) for d, v in util.items()},
                            "constraining": _r(max(finite.values()), 4) if finite else None,
                            "progress": None,
                            **{f"progress_{d}": None for d in DIMS},
                            "per_instance_constraining": None},
            "constraining_resource": constraining_dim,
            "spinup_share": None,
            "billed_breakdown": {},
            "latency": {"p50": _r(percentile(norm_lat, 50), 3),
                        "p95": _r(percentile(norm_lat, 95), 3)},
            "instances_acquired": 0,
            "migrations": 0,
            "migrations_per_migrated_task": 0.0,
            "migration_seconds": 0.0,
            "migrations_aborted": 0,
            "migrations_cancelled": 0,
            "migration_footprint": None,
            "revocations": 0,
            "tasks_revoked": 0,
            "cost_by_type": {"fargate": _r(total)},
            "cost_by_market": {"fargate": _r(total)},
            "usage_by_family": {},  # no instances: Fargate bills tasks
            "jobs": nj,
            "market": "fargate",
            "estimator": None,
            "seed": cfg.seed,
            "tick_s": cfg.tick_s,
            "simulated_hours": _r(((float(end.max()) if n else 0.0) - t_first) / 3600.0, 4),
            "fargate_tasks_split": oversized,
            "fargate_prices": {"vcpu_hour_usd": VCPU_HOUR_USD, "gb_hour_usd": GB_HOUR_USD},
            "wall_seconds": _r(time.perf_counter() - wall0, 3),
        }
        if note:
            summary["lower_bound_integer_note"] = note
        if cfg.faults is not None:  # no instances to crash, no requests to fail
            summary["faults"] = {"spec": cfg.faults.spec(), "note": "not modelled: Fargate "
                                 "bills tasks, with no instances or requests of its own"}
        if cfg.savings_plan is not None:  # its bill is Fargate's own 2018 prices
            summary["savings_plan"] = cfg.savings_plan.text()
            summary["savings_plan_note"] = ("not modelled: the fargate cost model bills at "
                                            "its 2018 list prices, with no commitment")
        from stratus.sim.result import instance_columns

        instances = pd.DataFrame([], columns=instance_columns(len(cfg.catalog.dims)))
        tasks = pd.DataFrame({"first_start_s": submit, "finish_s": end,
                              "migrations": np.zeros(n, dtype=np.int64),
                              "fargate_vcpu": shares * vcpu, "fargate_gb": shares * gb,
                              "cost_usd": cost})
        jobs = pd.DataFrame({"job_id": uniq, "submit_s": job_submit, "end_s": job_end,
                             "longest_task_s": job_maxrt, "normalized_latency": norm_lat})
        return ReplayResult(summary, instances, tasks, jobs)

