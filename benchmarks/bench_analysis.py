"""How long one evaluation of each waiting policy's queueing model takes (paper 000 §3-4),
at the paper's s ~ 100 and at s = 5000, and one NJW optimum search.

    python benchmarks/bench_analysis.py [--json]
"""

from __future__ import annotations

import argparse
import json
import time

from stratus.waiting.analysis import POLICIES, evaluate, optimal_servers


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
    args = ap.parse_args()
    rows = []
    for s, lam in ((108, 0.2), (5000, 9.9)):
        for p in POLICIES:
            sec = _time(lambda p=p, s=s, lam=lam: evaluate(p, s, lam=lam, mu=0.002, pf=3.84,
                                                           po=9.6, b=900, t=180))
            rows.append({"policy": p, "servers": s, "ms": round(sec * 1e3, 3)})
    sec = _time(lambda: optimal_servers("njw", 0.2, 0.002, 3.84, 9.6), repeat=5)
    rows.append({"policy": "njw optimum", "servers": None, "ms": round(sec * 1e3, 3)})
    if args.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            print(f"{r['policy']:12s} s={r['servers']!s:5s} {r['ms']:8.3f} ms")


if __name__ == "__main__":
    main()
