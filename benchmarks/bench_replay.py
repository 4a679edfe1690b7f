"""Replay throughput: tasks per wall-clock second for whole synthetic days.

    python benchmarks/bench_replay.py                        # task-per-instance, Google-like day
    python benchmarks/bench_replay.py --scheduler stratus --scale 3
    python benchmarks/bench_replay.py --profile 25           # cProfile: top 25 by own time

Trace generation is timed apart from the replay: the number that matters is the
engine plus policy (``replay tasks/s``). Prints a table, or one JSON document with --json.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stratus.engine import Engine, ReplayConfig  # noqa: E402
from stratus.registry import get_spec  # noqa: E402
from traces.synthetic import generate  # noqa: E402


def bench(scheduler: str, workload: str, scale: float, hours: float, seed: int,
          profile: int = 0, estimator: str | None = None) -> dict:
    t0 = time.perf_counter()
    trace = generate(workload, scale=scale, hours=hours, seed=seed)
    gen_s = time.perf_counter() - t0
    spec = get_spec(scheduler)
    cfg = ReplayConfig(seed=seed, estimator=estimator or spec.estimator or "oracle")
    engine = Engine(trace, spec.factory(), cfg)
    prof = cProfile.Profile() if profile else None
    t1 = time.perf_counter()
    if prof:
        prof.enable()
    res = engine.run()
    if prof:
        prof.disable()
    wall = time.perf_counter() - t1
    out = {
        "scheduler": scheduler, "workload": workload, "scale": scale, "hours": hours, "seed": seed,
        "tasks": trace.n_tasks, "jobs": trace.n_jobs, "generate_seconds": round(gen_s, 3),
        "replay_seconds": round(wall, 3), "tasks_per_second": round(trace.n_tasks / wall, 1),
        "ticks": engine.ticks, "instances_acquired": res["instances_acquired"],
        "total_cost_usd": res["total_cost_usd"], "profiled": bool(prof),
    }
    if prof:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(profile)
        out["profile"] = buf.getvalue()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scheduler", action="append", help="repeatable (default: task-per-instance)")
    ap.add_argument("--workload", default="google")
    ap.add_argument("--scale", type=float, default=1.0, help="1.0 = ~100k tasks per day")
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--estimator", default=None)
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print the top N functions")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [bench(s, args.workload, args.scale, args.hours, args.seed, args.profile, args.estimator)
            for s in (args.scheduler or ["task-per-instance"])]
    if args.json:
        print(json.dumps(rows))
        return 0
    for r in rows:
        print(f"{r['scheduler']:>20}  {r['workload']} x{r['scale']:g} {r['hours']:g} h: "
              f"{r['tasks']:,} tasks in {r['replay_seconds']:.2f} s = {r['tasks_per_second']:,.0f} tasks/s"
              f"  (generate {r['generate_seconds']:.2f} s, {r['instances_acquired']:,} instances)")
        if "profile" in r:
            print(r["profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
