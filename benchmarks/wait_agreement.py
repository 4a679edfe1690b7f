"""Does `stratus waiting simulate` agree with the queueing analyzer (paper 000 §3-4) on an
M/M/s trace, and is the issue's 2% attainable for the mean wait at all?

R independent seeds of a `synthetic:mms` trace (lam = 0.2, mu = 0.002, 1-core 4-GiB jobs
on 1-core servers priced at a 0.6 discount, i.e. pf/po = 0.4: 000's baseline), each run
through exactly what the CLI runs (`stratus.app.waiting.simulate_trace`), per policy and
s. For each cell: the across-seed mean and standard deviation of the simulated mean wait
and normalized price, a 95% confidence interval of the mean (Student t, R - 1 degrees of
freedom), whether the analyzer lies inside it, and, for AJW (no reneging), the heavy-
traffic relative standard error of one run's mean wait:

    rel. SE ~ sqrt(2 sigma^2 / (delta^2 T)),  delta = s mu - lam,  sigma^2 = lam + s mu,

T the kept span (n_kept / lam). It is the asymptotic variance of the time average of
reflected Brownian motion with drift -delta and variance sigma^2 (canonical RBM: stationary
mean 1/2, time-average asymptotic variance 1/2; Abate and Whitt, "Transient behavior of
regulated Brownian motion", Adv. Appl. Prob. 19, 1987; used for run-length planning of
queueing simulations in Whitt, "Planning queueing simulations", Management Science 35,
1989), which the M/M/s queue length approaches as rho -> 1; the mean wait is E[Q] / lam
(Little), so its relative error is the queue's.

    PYTHONPATH=. python benchmarks/wait_agreement.py [--seeds 20] [--jobs 2000000] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

LAM, MU = 0.2, 0.002
T95 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 8: 2.365, 10: 2.262, 15: 2.145,
       20: 2.093, 30: 2.045}


def t95(r: int) -> float:
    """Student t's 97.5% quantile with r - 1 degrees of freedom (table; 1.96 beyond)."""
    keys = [k for k in sorted(T95) if k >= r]
    return T95[keys[0]] if keys else 1.96


def rbm_relative_se(s: int, n_kept: int, lam: float = LAM, mu: float = MU) -> float | None:
    """Heavy-traffic relative standard error of one run's mean wait (module docstring);
    None when the queue is not in heavy traffic (s mu <= lam has no steady state)."""
    delta = s * mu - lam
    if delta <= 0:
        return None
    horizon = n_kept / lam
    return math.sqrt(2.0 * (lam + s * mu) / (delta * delta * horizon))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=20, help="independent traces (20)")
    ap.add_argument("--jobs", type=int, default=2_000_000, help="jobs per trace (2,000,000)")
    ap.add_argument("--policies", default="njw,ajw,ajw-t,sww")
    ap.add_argument("--servers", default="101,108,120")
    ap.add_argument("--b", type=float, default=900.0)
    ap.add_argument("--json", action="store_true")
    opts = ap.parse_args()

    from stratus.app.cli import _build_parser
    from stratus.app.waiting import simulate_trace
    from stratus.traces.synthetic import generate
    from stratus.waiting.analysis import evaluate

    policies = opts.policies.split(",")
    servers = [int(x) for x in opts.servers.split(",")]
    hours = opts.jobs / LAM / 3600.0
    spec = f"synthetic:mms?cpu=1&mem=4&hours={hours:g}"
    parser = _build_parser()
    sims: dict[tuple[str, int], list[dict]] = {(p, s): [] for p in policies for s in servers}
    t0 = time.perf_counter()
    for seed in range(opts.seeds):
        trace = generate("mms", hours=hours, seed=seed, cpu=1.0, mem=4.0)
        for p in policies:
            for s in servers:
                args = parser.parse_args(
                    ["waiting", "simulate", "--trace", spec, "--seed", str(seed),
                     "--reserved", str(s), "--reserved-cores", "1", "--reserved-mem-gb", "4",
                     "--reserved-discount", "0.6", "--policy", p, "--b", str(opts.b)])
                out = simulate_trace(trace, args)
                sims[(p, s)].append({"seed": seed, "jobs": out["jobs"],
                                     "mean_wait_s": out["mean_wait_s"],
                                     "normalized_price": out["normalized_price"],
                                     "on_demand_fraction": out["on_demand_fraction"]})
        print(f"seed {seed}: {trace.n_tasks:,} jobs, {time.perf_counter() - t0:.0f} s",
              file=sys.stderr)
    rows = []
    for (p, s), runs in sims.items():
        model = evaluate(p, s, lam=LAM, mu=MU, pf=3.84, po=9.6, b=opts.b)
        row = {"policy": p, "servers": s, "seeds": len(runs),
               "analyzer_wait_s": round(model.wait_s, 3),
               "analyzer_price": round(model.normalized_price, 6)}
        for key, ref, name in (("mean_wait_s", model.wait_s, "wait"),
                               ("normalized_price", model.normalized_price, "price")):
            v = np.array([r[key] for r in runs], dtype=np.float64)
            mean = float(v.mean())
            sd = float(v.std(ddof=1)) if len(v) > 1 else 0.0
            half = t95(len(v)) * sd / math.sqrt(len(v)) if len(v) > 1 else 0.0
            row[f"{name}_mean"] = round(mean, 6)
            row[f"{name}_sd"] = round(sd, 6)
            row[f"{name}_ci95"] = [round(mean - half, 6), round(mean + half, 6)]
            row[f"{name}_analyzer_in_ci"] = bool(mean - half - 1e-9 <= ref <= mean + half + 1e-9)
            row[f"{name}_rel_diff"] = round(mean / ref - 1.0, 6) if ref else None
            # the share of single runs within 2% of the analyzer (the acceptance item)
            row[f"{name}_runs_within_2pct"] = (
                round(float(np.mean(np.abs(v - ref) <= 0.02 * abs(ref))), 4) if ref else None)
            row[f"{name}_rel_sd"] = round(sd / mean, 6) if mean else None
        n_kept = runs[0]["jobs"] - 2 * int(runs[0]["jobs"] * 0.1)
        rse = rbm_relative_se(s, n_kept) if p == "ajw" else None
        row["wait_rel_se_rbm"] = None if rse is None else round(rse, 6)
        row["jobs_for_2pct_rbm"] = None if rse is None else int(n_kept * (rse / 0.02) ** 2)
        # the same from the measured spread: kept jobs for a one-run standard error of 2%
        rsd = row["wait_rel_sd"]
        row["jobs_for_2pct_measured"] = None if not rsd else int(n_kept * (rsd / 0.02) ** 2)
        rows.append(row)
    doc = {"lam": LAM, "mu": MU, "b": opts.b, "jobs_per_trace": opts.jobs,
           "steady_state": 0.1, "wall_s": round(time.perf_counter() - t0, 1),
           "rows": rows, "runs": {f"{p}@{s}": v for (p, s), v in sims.items()}}
    if opts.json:
        print(json.dumps(doc))
        return
    print(f"{'policy':7s} {'s':>4s} {'wait model':>10s} {'wait sim mean±sd':>18s} "
          f"{'in CI':>6s} {'RBM rel SE':>10s} {'price model':>11s} {'price sim mean±sd':>20s} "
          f"{'in CI':>6s}")
    for r in rows:
        rse = "-" if r["wait_rel_se_rbm"] is None else f"{100 * r['wait_rel_se_rbm']:.1f}%"
        print(f"{r['policy']:7s} {r['servers']:4d} {r['analyzer_wait_s']:10.2f} "
              f"{r['wait_mean']:9.2f}±{r['wait_sd']:<8.2f} {str(r['wait_analyzer_in_ci']):>6s} "
              f"{rse:>10s} {r['analyzer_price']:11.5f} {r['price_mean']:10.5f}±"
              f"{r['price_sd']:<9.5f} {str(r['price_analyzer_in_ci']):>6s}")


if __name__ == "__main__":
    main()
