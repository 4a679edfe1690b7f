"""``stratus waiting simulate``: a trace through a reserved pool under a waiting policy,
with the overflow billed in the papers' cloud model (000 §5)."""

from __future__ import annotations

import numpy as np

from pricing.catalog import get_catalog
from stratus.errors import ConfigError
from stratus.waiting.bill import pool_prices, smallest_vm_costs
from stratus.waiting.pool import PoolSpec, WaitingPolicy, simulate, summarize

MISPREDICTION_SEED = 0x3A17


def mispredictions(policy: str, runtime: np.ndarray, t: float, f_over: float, f_under: float,
                   seed: int) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """(short, over, under) per job, seeded (000 §4.1.1, §4.2.1). LJW: f_over of the short
    jobs are believed long, f_under of the long ones short. SWW and compound: disjoint
    shares f_over and f_under of all jobs over- and under-predict their wait."""
    if not (0 <= f_over <= 1 and 0 <= f_under <= 1 and f_over + f_under <= 1):
        raise ConfigError(f"--f-over and --f-under are fractions with a sum ≤ 1, got "
                          f"{f_over} and {f_under}")
    n = len(runtime)
    u = np.random.default_rng([seed, MISPREDICTION_SEED]).random(n)
    short = over = under = None
    if policy in ("ljw", "compound"):
        true_short = runtime < t
        short = np.where(true_short, u >= f_over, u < f_under)
    if policy in ("sww", "compound"):
        v = np.random.default_rng([seed, MISPREDICTION_SEED, 1]).random(n)
        over = v < f_over
        under = (v >= f_over) & (v < f_over + f_under)
    return short, over, under


def simulate_trace(trace, args) -> dict:
    spec = PoolSpec(args.reserved, args.reserved_cores, args.reserved_mem_gb,
                    placement=args.packing, order=args.scheduling,
                    work_conserving=args.work_conserving)
    policy = WaitingPolicy(args.policy, args.b, args.t)
    catalog = get_catalog(args.catalog)
    prices = pool_prices(catalog, spec.cores, spec.mem_gib, args.reserved_discount)
    f = trace.frame
    submit = f["submit_s"].to_numpy(np.float64)
    runtime = f["runtime_s"].to_numpy(np.float64)
    cpu = f["cpu"].to_numpy(np.float64)
    mem = f["mem_gib"].to_numpy(np.float64)
    order = np.argsort(submit, kind="stable")
    submit, runtime, cpu, mem = submit[order], runtime[order], cpu[order], mem[order]
    short, over, under = mispredictions(args.policy, runtime, args.t, args.f_over,
                                        args.f_under, args.seed)
    run = simulate(spec, policy, submit, runtime, cpu, mem, short, over, under)
    steady = args.steady_state
    if steady is None:
        steady = 0.1 if trace.meta.get("generator") == "mms" else 0.0
    out = summarize(run, submit, runtime, cpu, prices.server_reserved_hourly, spec.servers,
                    smallest_vm_costs(catalog, cpu, mem, runtime), prices.core_hour_ondemand,
                    steady)
    return {"policy": args.policy, "reserved": spec.servers, **out,
            "trace": trace.name, "b": args.b, "t": args.t, "scheduling": spec.order,
            "packing": spec.placement, "work_conserving": spec.work_conserving,
            "steady_state": steady, "cloud": "smallest-vm", "catalog": catalog.name,
            "server_type": prices.server_type,
            "server_reserved_hourly": round(prices.server_reserved_hourly, 6),
            "server_ondemand_hourly": prices.server_ondemand_hourly}
