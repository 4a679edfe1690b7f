"""An integer lower bound on the cost of a replay: whole instances, per scheduling slot.

The fluid bound (stratus.metrics) lets any fraction of an instance be rented. This one
rents whole instances: time is cut into slots of the tick length, and in every slot the
load that *every* instant of the slot (where anything runs) must hold is covered by an
integer number of instances of the replay's types, each at its cheapest price in the slot
over the replay's markets. That is a small covering MILP per slot,

    minimise  sum_j p_j x_j   s.t.  sum_j cap_jd x_j >= load_d  (every d),  x_j in Z>=0,

solved exactly with OR-Tools (an optional extra: without it the bound is ``None`` and the
reason is reported). The slot's integer rate is then combined with the fluid rate instant
by instant: the bill's rate at t is at least max(integer rate of the slot, fluid rate at t),
so the bound is never below the fluid bound. See docs/decisions.md, "The integer lower
bound", for why the slot's *minimum* load (not its peak) is the one every scheduler pays.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

import numpy as np

from pricing.catalog import Catalog
from pricing.prices import PriceBook

#: prices become integers in units of 1e-9 $/h for CP-SAT, rounded down (a bound stays one)
PRICE_SCALE = 1_000_000_000
SOLVERS = ("cp-sat", "scip")
DEFAULT_SOLVER = "cp-sat"  # measured faster on these tiny models (docs/decisions.md)


def ortools_missing() -> str | None:
    """Why the integer bound cannot be computed here, or None if it can."""
    try:
        import ortools.sat.python.cp_model  # noqa: F401
    except Exception as exc:  # ImportError, or a broken binary wheel
        return (f"OR-Tools is not importable ({type(exc).__name__}: {exc}); install the "
                f"'solver' extra (pip install 'stratus[solver]')")
    return None


def _int_prices(prices: Iterable[float]) -> list[int]:
    out = []
    for p in prices:
        x = p * PRICE_SCALE
        r = round(x)
        out.append(int(r) if abs(x - r) <= 1e-6 * max(1.0, abs(x)) else math.floor(x))
    return out


class CoverSolver:
    """Cheapest integer cover of a load by instance types, memoized on (load, prices).

    ``caps`` is [J, D] integer units; a key's prices are $/h per type (inf: unavailable).
    Values are $/h, rounded down to 1e-9 $/h so that they never exceed the true optimum."""

    def __init__(self, caps: np.ndarray, solver: str = DEFAULT_SOLVER,
                 shortcut: bool = True) -> None:
        if solver not in SOLVERS:
            raise ValueError(f"unknown solver {solver!r}; known: {', '.join(SOLVERS)}")
        caps = np.asarray(caps, dtype=np.int64)
        # every cover's capacity in dimension d is a multiple of g_d, the gcd of the types'
        # capacities in d: a load may be rounded up to a multiple of g_d, exactly, and
        # capacities divided by it (m4: 2 vCPU and 8 GiB steps), which merges keys
        self.unit = tuple(int(g) if g else 1 for g in np.gcd.reduce(caps, axis=0))
        self.caps = [tuple(int(c) // g for c, g in zip(row, self.unit)) for row in caps]
        self.solver = solver
        self.shortcut = shortcut
        self.memo: dict[tuple, float] = {}
        self.solves = 0
        self.shortcuts = 0  # keys settled without a solver (see _solve)
        self.solve_seconds = 0.0

    def __call__(self, load: tuple[int, ...], prices: tuple[float, ...]) -> float:
        load = tuple(-(-x // g) for x, g in zip(load, self.unit))
        key = (load, prices)
        v = self.memo.get(key)
        if v is None:
            v = self.memo[key] = self._solve(load, prices)
        return v

    def _solve(self, load: tuple[int, ...], prices: tuple[float, ...]) -> float:
        if not any(load):
            return 0.0
        types = [(c, p) for c, p in zip(self.caps, prices) if math.isfinite(p)]
        # each type at most the count that covers the load alone: an optimum never needs more
        ub = [max(-(-x // c) if c else 0 for x, c in zip(load, cap)) for cap, _ in types]
        cost = _int_prices(p for _, p in types)
        # exact without a solver when the best single-type cover already costs no more than
        # the fluid rate of the load in some dimension d (every cover costs at least that):
        # best <= load_d * min_j cost_j / cap_jd, in integers
        best = min(u * c for u, c in zip(ub, cost))
        for d, need in enumerate(load if self.shortcut else ()):
            if need and all(best * cap[d] <= need * c for (cap, _), c in zip(types, cost)):
                self.shortcuts += 1
                return best / PRICE_SCALE
        t0 = time.perf_counter()
        if self.solver == "cp-sat":
            v = self._cp_sat(load, types, ub)
        else:
            v = self._scip(load, types, ub)
        self.solve_seconds += time.perf_counter() - t0
        self.solves += 1
        return v

    @staticmethod
    def _cp_sat(load, types, ub) -> float:
        from ortools.sat.python import cp_model

        m = cp_model.CpModel()
        xs = [m.new_int_var(0, u, f"x{j}") for j, u in enumerate(ub)]
        for d, need in enumerate(load):
            if need:
                m.add(sum(cap[d] * x for (cap, _), x in zip(types, xs)) >= need)
        cost = _int_prices(p for _, p in types)
        m.minimize(sum(c * x for c, x in zip(cost, xs)))
        s = cp_model.CpSolver()
        s.parameters.num_workers = 1  # tiny models: one worker is fastest and deterministic
        s.parameters.cp_model_presolve = False  # presolve costs more than the search here
        st = s.solve(m)
        if st != cp_model.OPTIMAL:
            raise RuntimeError(f"CP-SAT did not prove optimality ({s.status_name(st)})")
        return int(round(s.objective_value)) / PRICE_SCALE

    @staticmethod
    def _scip(load, types, ub) -> float:
        from ortools.linear_solver import pywraplp

        s = pywraplp.Solver.CreateSolver("SCIP")
        if s is None:
            raise RuntimeError("OR-Tools has no SCIP backend here")
        params = pywraplp.MPSolverParameters()
        params.SetDoubleParam(params.RELATIVE_MIP_GAP, 0.0)  # default 1e-4: not exact
        xs = [s.IntVar(0, u, f"x{j}") for j, u in enumerate(ub)]
        for d, need in enumerate(load):
            if need:
                s.Add(sum(cap[d] * x for (cap, _), x in zip(types, xs)) >= need)
        cost = _int_prices(p for _, p in types)
        s.Minimize(sum(c * x for c, x in zip(cost, xs)))
        if s.Solve(params) != pywraplp.Solver.OPTIMAL:
            raise RuntimeError("SCIP did not prove optimality")
        # integer costs: the optimum is an integer; the dual bound, rounded up, is it
        return math.ceil(s.Objective().BestBound() - 1e-6) / PRICE_SCALE


def slot_min_prices(prices: PriceBook, catalog: Catalog, markets: Iterable[str],
                    edges: np.ndarray) -> np.ndarray:
    """[K, J]: per slot [edges[k], edges[k+1]) and type, the lowest price the type has
    anywhere in the slot over the given markets ($/h; inf where it has none)."""
    k = edges.size - 1
    out = np.full((k, len(catalog)), np.inf)
    a, b = edges[:-1], edges[1:]
    for j, t in enumerate(catalog):
        for m in markets:
            if not prices.has(t.name, m):
                continue
            s = prices.series(t.name, m)
            # the price in force at each slot's start (the first price before the first change)
            lo = np.clip(np.searchsorted(s.times, a, side="right") - 1, 0, None)
            best = s.prices[lo].copy()
            # every change strictly inside a slot
            inside = (s.times > edges[0]) & (s.times < edges[-1])
            if inside.any():
                ct = s.times[inside]
                slot = np.searchsorted(edges, ct, side="right") - 1
                ok = ct < b[slot]
                np.minimum.at(best, slot[ok], s.prices[inside][ok])
            out[:, j] = np.minimum(out[:, j], best)
    return out


def integer_lower_bound(starts: np.ndarray, ends: np.ndarray, reqs: np.ndarray,
                        prices: PriceBook, catalog: Catalog, markets: Iterable[str],
                        slot_s: float, rho_times: np.ndarray, rho: np.ndarray,
                        solver: str = DEFAULT_SOLVER, stats: dict | None = None) -> float:
    """The integer lower bound in dollars over run segments [starts, ends) with per-segment
    integer requests ``reqs`` [N, D]; ``rho_times``/``rho`` as from
    ``cheapest_unit_prices`` over the same markets (the fluid part). ``stats``, if given,
    receives slots, distinct keys, MILP solves and seconds."""
    markets = tuple(markets)
    t_start = time.perf_counter()
    if starts.size == 0:
        if stats is not None:
            stats.update(slots=0, keys=0, solves=0, seconds=0.0)
        return 0.0
    dims = reqs.shape[1]
    t0, t1 = float(starts.min()), float(ends.max())
    k0 = math.floor(t0 / slot_s)
    k1 = max(k0 + 1, math.ceil(t1 / slot_s))
    edges = np.arange(k0, k1 + 1, dtype=np.float64) * slot_s

    # the load as a step function: pieces between consecutive event times, with every slot
    # edge and every change of the cheapest unit prices among the event times
    times = np.concatenate([starts, ends, edges, rho_times])
    deltas = np.concatenate([reqs, -reqs, np.zeros((edges.size + rho_times.size, dims),
                                                   dtype=reqs.dtype)])
    order = np.argsort(times, kind="stable")
    times = times[order]
    load = np.cumsum(deltas[order], axis=0)[:-1]
    dt = np.diff(times)
    keep = dt > 0
    p_start, dt, load = times[:-1][keep], dt[keep], load[keep]
    busy = load.any(axis=1)

    # fluid rate of every piece, as fluid_lower_bound has it
    idx = np.clip(np.searchsorted(rho_times, p_start, side="right") - 1, 0, None)
    fluid = (load.astype(np.float64) * rho[idx]).max(axis=1)

    # per slot: the least load over the busy part of the slot, dimension by dimension
    slot = np.clip(np.searchsorted(edges, p_start, side="right") - 1, 0, edges.size - 2)
    nslots = edges.size - 1
    big = np.iinfo(np.int64).max
    least = np.full((nslots, dims), big, dtype=np.int64)
    np.minimum.at(least, slot[busy], load[busy])
    has = least[:, 0] != big
    least[~has] = 0

    pmin = slot_min_prices(prices, catalog, markets, edges)
    caps = np.array([t.capacity for t in catalog], dtype=np.int64)
    cover = CoverSolver(caps, solver)
    rate = np.zeros(nslots)
    for k in np.flatnonzero(has).tolist():
        rate[k] = cover(tuple(least[k].tolist()), tuple(pmin[k].tolist()))

    piece_rate = np.maximum(np.where(busy, rate[slot], 0.0), fluid)
    if stats is not None:
        stats.update(slots=int(has.sum()), keys=len(cover.memo), solves=cover.solves,
                     shortcuts=cover.shortcuts,
                     solver=solver, solve_seconds=round(cover.solve_seconds, 3),
                     seconds=round(time.perf_counter() - t_start, 3))
    return float(np.sum(piece_rate * dt) / 3600.0)
