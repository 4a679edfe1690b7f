"""What the integer lower bound costs: replay seconds, bound seconds and the bound's share,
on the m4 catalog and on a c4+m4+r4 catalog (17 types, mixed shapes), on-demand.

    python benchmarks/bench_intbound.py                      # 15 min and 1 h of the real window
    python benchmarks/bench_intbound.py --minutes 15 --catalogs cmr --json

Trace: the real Google 2011 window (``../shared/data/google-2011``, from 600 s), its first
``--minutes``; skipped with a note when the folder is absent. The replay is the engine's
(``stratus`` with perfect runtime knowledge, seed 1); ``replay_s`` is ``Engine.run`` (the
event loop plus ``ReplayResult.build``, which computes the bounds), ``bound_s`` the integer
bound's own share of it (``stratus.sim.result.integer_bound``, timed from outside).

c4/r4 prices: approximate 2017 us-west-2 on-demand Linux $/h (the figures issue 19 gives;
not checked against a 2017 price list here). m4 is the project's built-in catalog.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stratus.pricing.catalog import M4, Catalog, InstanceType  # noqa: E402
from stratus.pricing.prices import ON_DEMAND, PriceBook  # noqa: E402

GOOGLE_2011 = ROOT / ".." / "shared" / "data" / "google-2011"

C4 = [("c4.large", 2, 3.75, 0.10), ("c4.xlarge", 4, 7.5, 0.199),
      ("c4.2xlarge", 8, 15, 0.398), ("c4.4xlarge", 16, 30, 0.796),
      ("c4.8xlarge", 36, 60, 1.591)]
R4 = [("r4.large", 2, 15.25, 0.133), ("r4.xlarge", 4, 30.5, 0.266),
      ("r4.2xlarge", 8, 61, 0.532), ("r4.4xlarge", 16, 122, 1.064),
      ("r4.8xlarge", 32, 244, 2.128), ("r4.16xlarge", 64, 488, 4.256)]


def cmr() -> Catalog:
    """c4 + m4 + r4: 17 types whose prices are not linear in any one dimension."""
    extra = [InstanceType(n, c, m, p, family=n.split(".")[0]) for n, c, m, p in C4 + R4]
    return Catalog([*M4, *extra], name="c4m4r4")


CATALOGS = {"m4": lambda: M4, "cmr": cmr}


def load(minutes: float):
    from stratus.traces.loaders import load_file

    return load_file(GOOGLE_2011, f"google2011?window_start_s=600&window_hours={minutes / 60:g}")


def run(trace, minutes: float, catalog: Catalog, scheduler: str) -> dict:
    import stratus.sim.result as result
    from stratus.app.registry import make_scheduler
    from stratus.sim.engine import Engine, ReplayConfig

    spent = [0.0]
    bound = result.integer_bound

    def timed(*args, **kw):  # the bound's own seconds: the summary holds no wall times
        t0 = time.perf_counter()
        try:
            return bound(*args, **kw)
        finally:
            spent[0] += time.perf_counter() - t0

    result.integer_bound = timed
    cfg = ReplayConfig(market=ON_DEMAND, catalog=catalog, seed=1,
                       prices=PriceBook.on_demand(catalog))
    t0 = time.perf_counter()
    try:
        res = Engine(trace, make_scheduler(scheduler), cfg).run()
    finally:
        result.integer_bound = bound
    total = time.perf_counter() - t0
    s = res.summary
    st = s.get("lower_bound_integer_stats") or {}
    bound_s = spent[0]
    return {"minutes": minutes, "catalog": catalog.name, "types": len(catalog),
            "tasks": s["tasks"], "replay_s": round(total, 2),
            "bound_s": round(bound_s, 2), "bound_share": round(bound_s / total, 3),
            "cost_usd": s["total_cost_usd"], "fluid_usd": s["lower_bound_cost_usd"],
            "integer_usd": s["lower_bound_integer_usd"], "stats": st}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", default="15,60", help="window lengths, comma-separated")
    p.add_argument("--catalogs", default="m4,cmr", help="m4 and/or cmr (c4+m4+r4)")
    p.add_argument("--scheduler", default="stratus")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    a = p.parse_args(argv)
    if not GOOGLE_2011.is_dir():
        print(f"skipped: {GOOGLE_2011} is absent")
        return 0
    from stratus.sim.intbound import ortools_missing

    why = ortools_missing()  # imports OR-Tools once, outside every timing
    if why:
        print(f"skipped: {why}")
        return 0
    rows = []
    for m in a.minutes.split(","):
        trace = load(float(m))
        rows += [run(trace, float(m), CATALOGS[c](), a.scheduler) for c in a.catalogs.split(",")]
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'min':>4} {'catalog':>8} {'tasks':>7} {'replay_s':>9} {'bound_s':>8} {'share':>6} "
          f"{'fluid $':>9} {'integer $':>10} {'kind':>13} {'gap max':>8}")
    for r in rows:
        st = r["stats"]
        print(f"{r['minutes']:>4g} {r['catalog']:>8} {r['tasks']:>7} {r['replay_s']:>9.2f} "
              f"{r['bound_s']:>8.2f} {r['bound_share']:>6.1%} {r['fluid_usd']:>9.2f} "
              f"{r['integer_usd'] if r['integer_usd'] is not None else '-':>10} "
              f"{st.get('kind', '-'):>13} {st.get('gap_max', '-'):>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
