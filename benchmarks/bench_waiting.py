"""How long one evaluation of each waiting policy's queueing model takes (paper 000 §3-4),
at the paper's s ~ 100 and at s = 5000, and one NJW optimum search.

    python benchmarks/bench_waiting.py [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from stratus.waiting.analysis import POLICIES, evaluate, optimal_servers
from stratus.waiting.pool import PoolSpec, WaitingPolicy, simulate


def _time(fn, repeat: int = 20) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--jobs", type=int, default=2_000_000, help="M/M/s jobs (2,000,000)")
    args = ap.parse_args()
    rows = []
    for s, lam in ((108, 0.2), (5000, 9.9)):
        for p in POLICIES:
            sec = _time(lambda p=p, s=s, lam=lam: evaluate(p, s, lam=lam, mu=0.002, pf=3.84,
                                                           po=9.6, b=900, t=180))
            rows.append({"policy": p, "servers": s, "ms": round(sec * 1e3, 3)})
    sec = _time(lambda: optimal_servers("njw", 0.2, 0.002, 3.84, 9.6), repeat=5)
    rows.append({"policy": "njw optimum", "servers": None, "ms": round(sec * 1e3, 3)})
    rng = np.random.default_rng(1)
    n = args.jobs
    sub, rt = np.cumsum(rng.exponential(5.0, n)), rng.exponential(500.0, n)
    cpu, mem = np.ones(n), np.full(n, 4.0)
    for policy, s, b, t in (("njw", 108, 0, 0), ("ajw", 108, 0, 0), ("ajw-t", 101, 900, 0),
                            ("sww", 101, 900, 0), ("ljw", 101, 0, 180),
                            ("compound", 101, 900, 180)):
        t0 = time.perf_counter()
        simulate(PoolSpec(s, 1.0, 4.0), WaitingPolicy(policy, b, t), sub, rt, cpu, mem)
        sec = time.perf_counter() - t0
        rows.append({"policy": f"pool {policy}", "servers": s, "ms": round(sec * 1e3, 1),
                     "jobs_per_s": round(n / sec)})
    if args.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            rate = f"  {r['jobs_per_s']:,} jobs/s" if "jobs_per_s" in r else ""
            print(f"{r['policy']:14s} s={r['servers']!s:5s} {r['ms']:10.3f} ms{rate}")


if __name__ == "__main__":
    main()
