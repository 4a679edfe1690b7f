"""``stratus waiting simulate``: a trace through a reserved pool under a waiting policy,
with the overflow billed in the papers' cloud model (000 §5)."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from stratus.app.spec import AdviseSpec, WaitingSpec
from stratus.base.errors import ConfigError
from stratus.commitments.reserved import reserved_text
from stratus.pricing.catalog_files import get_catalog
from stratus.waiting.bill import mix_prices, pool_prices, smallest_vm_costs
from stratus.waiting.pool import (
    PoolSpec,
    WaitingPolicy,
    opportunity_cost,
    simulate,
    summarize,
)

MISPREDICTION_SEED = 0x3A17
SPECULATE_MARKETS = ("on-demand", "spot")


def _spot_book(opts: WaitingSpec, catalog):
    """The price book spot speculation reads: ``--spot-prices`` or the synthetic model for
    the catalog (the bundled trace for m4)."""
    from stratus.sim.markets import spot_book

    try:
        return spot_book(catalog, opts.spot_prices, opts.spot_zone, opts.spot_start)
    except ConfigError as e:
        raise ConfigError(f"--speculate-market spot: {e}") from None


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


def cloud_trace(trace, order: np.ndarray, run) -> object:
    """The rows that left for the cloud, submitted when they left (000 §5 composed with a
    virtual cluster: the VC sees exactly the stream the pool let go, at those times)."""
    from stratus.traces.schema import Trace

    f = trace.frame.iloc[order]
    gone = run.cloud
    sub = f[gone].copy()
    sub["submit_s"] = run.start[gone]
    sub = sub.sort_values(["submit_s", "job_id", "task_id"], kind="stable").reset_index(drop=True)
    return Trace(sub, name=f"{trace.name} (cloud overflow)",
                 meta={"params": {"hours": trace.meta.get("params", {}).get("hours")}})


def replay_overflow(trace, order, run, opts: WaitingSpec, history) -> dict:
    """The overflow through a registered VC scheduler (``--cloud NAME``) on ``--market``,
    in the replay's default cloud otherwise (tick, spin-up, migration)."""
    from stratus.app.registry import get_spec
    from stratus.app.runs import replay_one
    from stratus.app.spec import CloudSpec
    from stratus.traces.schema import fit_to_catalog

    sched = get_spec(opts.cloud)
    sub = cloud_trace(trace, order, run)
    if len(sub) == 0:
        return {"total_cost_usd": 0.0, "scheduler": sched.name, "tasks": 0}
    cloud = CloudSpec(trace=opts.trace, seed=opts.seed, catalog=opts.cloud_catalog,
                      market=opts.market, spot_prices=opts.spot_prices,
                      spot_zone=opts.spot_zone, spot_start=opts.spot_start)
    sub = fit_to_catalog(sub, get_catalog(opts.cloud_catalog), drop=False)
    return replay_one(cloud, sub, sched, history, None).summary


def runtime_estimates(trace, opts: WaitingSpec, history) -> np.ndarray:
    """Per row, what ``--estimator`` predicts at submission (learning online from jobs that
    ended before; a learning estimator first fits the warm-up history)."""
    from stratus.app.runs import fitted_estimator
    from stratus.policy.estimators import task_estimates

    est = fitted_estimator(opts.estimator, opts.seed, history, trace)
    return task_estimates(est, trace.frame)


def _round(v):
    return None if v is None else round(v, 6)


ML_FOLDS = 2  # time folds of the training jobs for the cross-fitted aggregation round


def train_wait_model(spec, policy, submit, runtime, cpu, mem, short, seed: int = 0,
                     rounds: int = 1):
    """003 §3.2: simulate the training jobs under the policy with the oracle, record the
    state each waiting decision saw and the wait the oracle foresaw (capped at 4b), fit.
    Then rounds of data aggregation (DAgger: Ross, Gordon and Bagnell, AISTATS 2011), cross-
    fitted: the training jobs are cut into ``ML_FOLDS`` stretches of time; each stretch runs
    again under a model fitted without that stretch's samples, the states it reaches are
    labelled by the oracle, and the forest is refitted on everything. A pool run by a model
    reaches states the oracle's never did (a queue it would not have let grow); run on the
    jobs it was fitted to, a forest that memorised them replays the oracle's run and the
    round adds nothing (docs/decisions.md)."""
    from stratus.waiting.ml import WaitModel
    from stratus.waiting.pool import STATE_FEATURES

    xs: list[list[float]] = []
    ys: list[float] = []
    tags: list[int] = []
    n = len(submit)
    edges = [n * k // ML_FOLDS for k in range(ML_FOLDS + 1)]

    def part(k):
        cut = slice(edges[k], edges[k + 1])
        return (submit[cut], runtime[cut], cpu[cut], mem[cut],
                None if short is None else short[cut])

    def observer(k):
        def observe(j, x, oracle):
            xs.append(x)
            ys.append(min(oracle, 4.0 * policy.b))
            # k: the stretch simulated; None: all of them, j tells which
            tags.append(k if k is not None else bisect_right(edges, j) - 1)
        return observe

    simulate(spec, policy, submit, runtime, cpu, mem, short, observe=observer(None))
    first = len(ys)
    model = WaitModel(seed=seed).fit(np.array(xs), np.array(ys))
    for _ in range(rounds):
        x_all, y_all, t_all = np.array(xs), np.array(ys), np.array(tags)
        for k in range(ML_FOLDS):
            other = t_all != k
            if other.sum() < 10:
                continue
            held_out = WaitModel(seed=seed).fit(x_all[other], y_all[other])
            simulate(spec, policy, *part(k), predictor=held_out.predict, observe=observer(k))
        model = WaitModel(seed=seed).fit(np.array(xs), np.array(ys))
    return model, {"model": "random forest", "features": list(STATE_FEATURES),
                   "train_jobs": int(n), "train_decisions": len(ys),
                   "oracle_run_decisions": first, "aggregation": f"cross-fitted, "
                   f"{ML_FOLDS} folds"}


def simulate_trace(trace, opts: WaitingSpec, history=lambda: None) -> dict:
    spec = opts.pool()
    policy = WaitingPolicy(opts.policy, opts.b, opts.t)
    catalog = get_catalog(opts.catalog)
    mix = opts.mix()
    if mix is None:
        prices = pool_prices(catalog, spec.cores, spec.mem_gib, opts.reserved_discount,
                             opts.reserved_type)
        rate = prices.server_reserved_hourly  # per server, S of them
        hourly = spec.servers * rate
    else:
        prices = mix_prices(catalog, mix, opts.reserved_discount)
        rate = list(prices.rates)  # one per server, in the pool's order
        hourly = prices.reserved_hourly
    f = trace.frame
    submit = f["submit_s"].to_numpy(np.float64)
    runtime = f["runtime_s"].to_numpy(np.float64)
    cpu = f["cpu"].to_numpy(np.float64)
    mem = f["mem_gib"].to_numpy(np.float64)
    order = np.argsort(submit, kind="stable")
    submit, runtime, cpu, mem = submit[order], runtime[order], cpu[order], mem[order]
    short, over, under = mispredictions(opts.policy, runtime, opts.t, opts.f_over,
                                        opts.f_under, opts.seed)
    estimate = None
    if opts.estimator != "oracle":
        estimate = runtime_estimates(trace, opts, history)[order]
        if opts.policy in ("ljw", "compound"):  # the class comes from the estimate (000 §4.2)
            short = estimate < opts.t
    ml = None
    spot = None
    if opts.wait_predictor == "ml":
        if opts.policy not in ("sww", "compound"):
            raise ConfigError("--wait-predictor ml is for sww and compound")
        cut = int(len(submit) * opts.train_fraction)
        model, ml = train_wait_model(spec, policy, submit[:cut], runtime[:cut], cpu[:cut],
                                     mem[:cut], None if short is None else short[:cut],
                                     seed=opts.seed, rounds=opts.ml_rounds)
        keep = slice(cut, None)  # score on the jobs after the training part, a fresh pool
        submit, runtime, cpu, mem = submit[keep], runtime[keep], cpu[keep], mem[keep]
        short, over, under = (None if a is None else a[keep] for a in (short, over, under))
        order = order[keep]
        decisions: list[tuple[float, float]] = []

        def predictor(x):
            return model.predict(x)

        def observe(j, x, oracle):
            decisions.append((model.predict(x), oracle))

        run = simulate(spec, policy, submit, runtime, cpu, mem, short, over, under,
                       estimate=None if estimate is None else estimate[keep],
                       predictor=predictor, observe=observe)
        from stratus.waiting.ml import mcc

        pred = np.array([d[0] for d in decisions])
        true = np.array([d[1] for d in decisions])
        ml.update(test_jobs=int(len(submit)), decisions=len(decisions),
                  mcc=None if not decisions else _round(mcc(pred > opts.b, true > opts.b)),
                  predicted_long=round(float(np.mean(pred > opts.b)), 6) if decisions else None,
                  truly_long=round(float(np.mean(true > opts.b)), 6) if decisions else None)
    else:
        if opts.policy == "ljw-spec" and opts.speculate_market == "spot":
            from stratus.sim.markets import check_spot_window
            from stratus.waiting.spot import SpotSpeculation

            book = _spot_book(opts, catalog)
            check_spot_window(book, float(submit.min()), float((submit + runtime).max()),
                              opts.spot_start)
            spot = SpotSpeculation(book, cpu, mem)
            spot.check(np.nonzero(spec.fits(cpu, mem))[0])
        run = simulate(spec, policy, submit, runtime, cpu, mem, short, over, under,
                       estimate=estimate, revocation=None if spot is None else spot.revocation)
    steady = opts.steady_state
    if steady is None:
        steady = 0.1 if trace.meta.get("generator") == "mms" else 0.0
    per_job = smallest_vm_costs(catalog, cpu, mem, runtime)
    # normalized_price's unit: the same jobs all on demand, which no server's shape changes
    ondemand = float(per_job.sum())
    spec_bill = None
    if spot is not None:
        from stratus.waiting.spot import speculation_bill

        spec_bill = speculation_bill(run, spot, runtime, per_job)
        out = summarize(run, submit, runtime, cpu, rate, spec.servers,
                        spec_bill["cloud_cost"], ondemand, steady,
                        waste_usd=spec_bill["killed_usd"] + spec_bill["revoked_usd"])
    else:
        out = summarize(run, submit, runtime, cpu, rate, spec.servers,
                        per_job, ondemand, steady,
                        speculation_s=opts.t if opts.policy == "ljw-spec" else 0.0)
    if opts.policy == "ljw-spec":
        # 003 §3.1: the two kinds of wasted spend, apart; they sum to speculation_waste_usd
        out["speculate_market"] = opts.speculate_market
        out["speculation_killed_usd"] = round(spec_bill["killed_usd"], 4) if spec_bill \
            else out["speculation_waste_usd"]
        out["revocation_waste_usd"] = round(spec_bill["revoked_usd"], 4) if spec_bill else 0.0
        out["revocations"] = spec_bill["revocations"] if spec_bill else 0
        out["speculative_runs"] = len(run.speculations or ())
    cloud_model = "smallest-vm"
    if opts.cloud != "smallest-vm":
        vc = replay_overflow(trace, order, run, opts, history)
        cloud_model = f"{opts.cloud} ({opts.market}, {opts.cloud_catalog})"
        out["cloud_cost_smallest_vm_usd"] = out["cloud_cost_usd"]
        out["cloud_cost_usd"] = round(vc["total_cost_usd"], 4)
        out["total_cost_usd"] = round(out["reserved_cost_usd"] + out["cloud_cost_usd"]
                                      + out["speculation_waste_usd"], 4)
        out["normalized_price"] = (round(out["total_cost_usd"] / ondemand, 6) if ondemand > 0
                                   else None)
        if out["mean_wait_s"] is not None:
            out["opportunity_cost"] = opportunity_cost(out["total_cost_usd"], cpu, runtime,
                                                       out["mean_wait_s"])
        out["cloud_replay"] = {k: vc.get(k) for k in (
            "scheduler", "tasks", "total_cost_usd", "lower_bound_cost_usd", "instances_acquired",
            "migrations", "latency", "utilization", "wall_seconds")}
    if ml is not None:
        # the oracle on the very same jobs, for the comparison 003 Figs. 7-8 make
        ref = simulate(spec, policy, submit, runtime, cpu, mem, short, over, under,
                       estimate=None if estimate is None else estimate[keep])
        o = summarize(ref, submit, runtime, cpu, rate, spec.servers, per_job, ondemand,
                      steady)
        ml["oracle_same_jobs"] = {k: o[k] for k in ("normalized_price", "mean_wait_s",
                                                    "on_demand_fraction", "total_cost_usd",
                                                    "opportunity_cost")}
        out["ml"] = ml
    if mix is None:
        pool = {"server_type": prices.server_type,
                "server_reserved_hourly": round(prices.server_reserved_hourly, 6),
                "server_ondemand_hourly": prices.server_ondemand_hourly}
    else:
        pool = {"reserved_mix": reserved_text(mix),
                "reserved_ondemand_hourly": round(prices.ondemand_hourly, 6)}
    return {"policy": opts.policy, "reserved": spec.servers, **out,
            "trace": trace.name, "b": opts.b, "t": opts.t, "scheduling": spec.order,
            "packing": spec.placement, "work_conserving": spec.work_conserving,
            "steady_state": steady, "cloud": cloud_model, "catalog": catalog.name,
            "reserved_hourly": round(hourly, 6), **pool}


def advise(trace, opts: AdviseSpec) -> dict:
    """``stratus advise``: the MILP's s, then the simulated optimum for the policy."""
    from stratus.waiting.advisor import Point, load_curve, milp_servers, search

    catalog = get_catalog(opts.catalog)
    prices = pool_prices(catalog, *opts.server(),
                         opts.reserved_discount, opts.reserved_type)
    f = trace.frame
    order = np.argsort(f["submit_s"].to_numpy(np.float64), kind="stable")
    submit = f["submit_s"].to_numpy(np.float64)[order]
    runtime = f["runtime_s"].to_numpy(np.float64)[order]
    cpu = f["cpu"].to_numpy(np.float64)[order]
    mem = f["mem_gib"].to_numpy(np.float64)[order]
    load, slot = load_curve(submit, runtime, cpu, opts.slot)
    start = milp_servers(load, slot, opts.server()[0], prices.server_reserved_hourly,
                         prices.core_hour_ondemand)
    short, over, under = mispredictions(opts.policy, runtime, opts.t, 0.0, 0.0, opts.seed)
    per_job = smallest_vm_costs(catalog, cpu, mem, runtime)
    ondemand = float(per_job.sum())  # normalized_price's unit (simulate_trace)
    policy = WaitingPolicy(opts.policy, opts.b, opts.t)
    steady = 0.1 if trace.meta.get("generator") == "mms" else 0.0

    def cost_at(s: int) -> Point:
        spec = PoolSpec(s, *opts.server(), opts.packing,
                        opts.scheduling, opts.work_conserving)
        run = simulate(spec, policy, submit, runtime, cpu, mem, short, over, under)
        o = summarize(run, submit, runtime, cpu, prices.server_reserved_hourly, s, per_job,
                      ondemand, steady,
                      speculation_s=opts.t if opts.policy == "ljw-spec" else 0.0)
        return Point(s, o["total_cost_usd"], o["normalized_price"], o["mean_wait_s"],
                     o["on_demand_fraction"])

    best, seen = search(cost_at, start)
    # the curve for the figure and the report: a band around both answers
    lo, hi = max(0, min(best, start) - 10), max(best, start) + 10
    step = max(1, (hi - lo) // 40)
    for s in range(lo, hi + 1, step):
        if s not in seen:
            seen[s] = cost_at(s)
    pts = [seen[s] for s in sorted(seen)]
    opt, milp = seen[best], seen[start]
    return {"policy": opts.policy, "trace": trace.name, "jobs": int(len(submit)),
            "milp_servers": start, "optimal_servers": best,
            "optimal": opt.__dict__, "at_milp": milp.__dict__,
            "milp_gap_servers": start - best,
            "milp_extra_cost_pct": round(100.0 * (milp.total_cost_usd / opt.total_cost_usd - 1.0),
                                         4) if opt.total_cost_usd > 0 else None,
            "slot_s": slot, "server_type": prices.server_type,
            "server_reserved_hourly": round(prices.server_reserved_hourly, 6),
            "points": [p.__dict__ for p in pts]}


def plot_advice(doc: dict, out, fmt: str = "png") -> None:
    """Price and mean wait against s, the optimum and the MILP's answer marked (the caller
    writes through a temporary name: stratus.app.outputs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = doc["points"]
    s = [p["servers"] for p in pts]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(s, [p["normalized_price"] for p in pts], "o-", ms=3, label="normalized price")
    ax.set_xlabel("reserved servers s")
    ax.set_ylabel("normalized price (bill / on-demand work)")
    ax2 = ax.twinx()
    ax2.plot(s, [p["mean_wait_s"] for p in pts], "s--", ms=3, color="tab:red", label="mean wait")
    ax2.set_ylabel("mean wait (s)")
    ax.axvline(doc["optimal_servers"], color="k", lw=1, label=f"optimum s={doc['optimal_servers']}")
    ax.axvline(doc["milp_servers"], color="gray", ls=":", lw=1,
               label=f"MILP s={doc['milp_servers']}")
    lines = ax.get_lines() + ax2.get_lines()
    ax.legend(lines, [ln.get_label() for ln in lines], loc="upper center", fontsize=8)
    ax.set_title(f"{doc['policy']} on {doc['trace']}", fontsize=9)
    fig.tight_layout()
    try:
        fig.savefig(out, format=fmt, dpi=100)
    finally:
        plt.close(fig)
