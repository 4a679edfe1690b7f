"""A replay of months (issue 35, item 3): a 145-day task and three short ones, as in
tests/core/test_long_tasks.py, with ticks skipped while the scheduler is quiet and, with
``--ticked``, ticked every tick (the scheduler wrapped without ``quiet``) for comparison.

    python benchmarks/bench_long_task.py                       # stratus, task-per-instance
    python benchmarks/bench_long_task.py --schedulers karpenter,hotspot --markets spot
    python benchmarks/bench_long_task.py --ticked --json

Per (scheduler, market): ticks run, wall seconds of ``Engine.run()`` (the event loop and the
summary, whose integer bound has one slot per tick of the replay's span), and the bill. The
ticked arm must give the same bill (the skip is exact; the property test holds every number).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DAY = 86400.0
ROWS = [(1, 0, 0.0, 145 * DAY, 1.0, 2.0), (2, 0, 100.0, 600.0, 1.0, 2.0),
        (3, 0, 5000.0, 1200.0, 2.0, 4.0), (4, 0, 10 * DAY, 3600.0, 1.0, 2.0)]


class Ticked:
    """The scheduler without ``quiet``: the engine ticks it every tick."""

    def __init__(self, inner) -> None:
        self.inner, self.name = inner, inner.name

    def schedule(self, view):
        return self.inner.schedule(view)

    def reset(self):
        self.inner.reset()

    def start(self, view):
        self.inner.start(view)

    def stats(self):
        return self.inner.stats()


def one(name: str, market: str, ticked: bool) -> dict:
    from stratus.app.registry import make_scheduler
    from stratus.sim.engine import Engine, ReplayConfig
    from tests.helpers.trace import make_trace

    sched = make_scheduler(name)
    eng = Engine(make_trace(ROWS), Ticked(sched) if ticked else sched,
                 ReplayConfig(market=market, spinup_s=(40.0, 40.0)))
    t0 = time.perf_counter()
    res = eng.run()
    return {"scheduler": name, "market": market, "ticked": ticked, "ticks": eng.ticks,
            "wall_s": round(time.perf_counter() - t0, 3),
            "total_cost_usd": res["total_cost_usd"], "ended_early": res["ended_early"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedulers", default="stratus,task-per-instance")
    ap.add_argument("--markets", default="on-demand,spot")
    ap.add_argument("--ticked", action="store_true", help="also every tick, for comparison")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = [one(n, m, t) for n in a.schedulers.split(",") for m in a.markets.split(",")
            for t in ((False, True) if a.ticked else (False,))]
    if a.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            print(f"{r['scheduler']:24s} {r['market']:9s} {'ticked' if r['ticked'] else 'skip':6s}"
                  f" ticks={r['ticks']:7d} wall={r['wall_s']:7.2f} s "
                  f"cost=${r['total_cost_usd']:.4f} ended_early={r['ended_early']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
