"""An integer lower bound on the cost of a replay: whole instances, per scheduling slot.

The fluid bound (stratus.sim.metrics) lets any fraction of an instance be rented. This one
rents whole instances: time is cut into slots of the tick length, and in every slot the
load that *every* instant of the slot (where anything runs) must hold is covered by an
integer number of instances of the replay's types, each at its cheapest price in the slot
over the replay's markets. That is a small covering MILP per slot,

    minimise  sum_j p_j x_j   s.t.  sum_j cap_jd x_j >= load_d  (every d),  x_j in Z>=0,

solved with OR-Tools' CP-SAT (an optional extra: without it the bound is ``None`` and the
reason is reported) under a deterministic time limit per solve and a budget per replay;
where a solve stops short, or the budget is spent, the slot keeps CP-SAT's proven bound or
the LP relaxation's, both still lower bounds, and the stats say how many slots did (see
docs/decisions.md, "The integer bound on any catalog"). A solve never touches signal
handling. The slot's integer rate is then combined with the fluid rate instant
by instant: the bill's rate at t is at least max(integer rate of the slot, fluid rate at t),
so the bound is never below the fluid bound. See docs/decisions.md, "The integer lower
bound", for why the slot's *minimum* load (not its peak) is the one every scheduler pays.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import numpy as np

from stratus.pricing.catalog import Catalog
from stratus.pricing.prices import PriceBook

#: prices become integers in units of 1e-9 $/h for CP-SAT, rounded down (a bound stays one)
PRICE_SCALE = 1_000_000_000
SOLVERS = ("cp-sat", "scip")
DEFAULT_SOLVER = "cp-sat"  # measured faster on these tiny models (docs/decisions.md)
#: CP-SAT's deterministic time (its own work units, ~seconds, the same on every machine and
#: run: the bound stays a function of the replay) per solve, and for all solves of a replay:
#: a fixed part plus a part per run segment, so the bound's share of a replay stays small
#: on any catalog (docs/decisions.md, "The integer bound on any catalog")
SOLVE_DET = 0.001
BUDGET_DET = 0.001
BUDGET_DET_PER_SEGMENT = 3e-7
#: how a slot's cover value was settled, best first
EXACT, TIME_LIMITED, LP = "exact", "time-limited", "lp"


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


@dataclass(frozen=True)
class Cover:
    """A key's settled value, in 1e-9 $/h: ``lb`` (what the bound uses) <= the optimum <=
    ``ub`` (the cheapest whole cover found); ``how``: EXACT, TIME_LIMITED or LP."""

    lb: int
    ub: int
    how: str


@lru_cache(maxsize=64)
def _bases(caps: tuple[tuple[int, ...], ...]) -> tuple[tuple[np.ndarray, ...], ...]:
    """Per size s <= min(J, D): every (s types, s tight dimensions) pair whose capacity
    matrix is invertible, as (types, dims, inverse, the types' capacities) arrays. They depend on the types only,
    so a replay computes them once."""
    c = np.array(caps, dtype=np.float64)
    j, d = c.shape
    out = []
    for s in range(1, min(j, d) + 1):
        ts = np.array(list(combinations(range(j), s)), dtype=np.int64)
        ds = np.array(list(combinations(range(d), s)), dtype=np.int64)
        types, dims = np.repeat(ts, len(ds), axis=0), np.tile(ds, (len(ts), 1))
        m = c[types[:, None, :], dims[:, :, None]]  # [n, dim, type]
        ok = np.abs(np.linalg.det(m)) > 0.5  # integer matrices: a nonzero det is >= 1
        if ok.any():
            out.append((types[ok], dims[ok], np.linalg.inv(m[ok]),
                        np.array(caps, dtype=np.int64)[types[ok]]))
    return tuple(out)


def relax(caps: np.ndarray, cost: np.ndarray, load: np.ndarray) -> tuple[float, int]:
    """The LP relaxation's value (a float, never above the true one by more than float
    noise) and the cheapest cover got by rounding up one of its basic solutions (an int).

    Every basic solution of min c.x s.t. Cx >= load, x >= 0 has s <= D types, nonzero and
    solving s constraints with equality; there are few (17 types, 2 dimensions: 170), so all
    are solved at once. Feasibility is checked loosely for the LP value (a point a little
    outside can only lower the minimum: still a bound) and exactly, in integers, for the
    rounded covers. The single-type covers are among them, so a cover is always found."""
    best_lp, best_ub = math.inf, None
    loadf = load.astype(np.float64)
    for types, dims, inv, cap_t in _bases(tuple(map(tuple, caps.tolist()))):
        x = np.einsum("nab,nb->na", inv, loadf[dims])  # cap_t: [n, s, D]
        cov = np.einsum("nsd,ns->nd", cap_t, x)
        feas = (x >= -1e-9 * (1 + np.abs(x))).all(axis=1) & \
            (cov >= load - 1e-7 * (1 + load)).all(axis=1)
        if feas.any():
            best_lp = min(best_lp, float((cost[types[feas]] * x[feas]).sum(axis=1).min()))
        xi = np.ceil(np.clip(x, 0, None) - 1e-9).astype(np.int64)
        good = (np.einsum("nsd,ns->nd", cap_t, xi) >= load).all(axis=1)
        if good.any():
            ub = int((cost[types[good]] * xi[good]).sum(axis=1).min())
            best_ub = ub if best_ub is None else min(best_ub, ub)
    if best_ub is None:  # in integers: a cover even where float rounding lost the above
        best_ub = simple_cover(caps.tolist(), cost.tolist(), load.tolist())
    return best_lp, best_ub


def simple_cover(caps, cost, load) -> int:
    """The cheapest cover by one type alone, among types with room in every dimension the
    load needs; without one (a GPU load, types without GPUs), one cheapest type per needed
    dimension, summed. Every dimension the load needs has a type with room in it."""
    need = [d for d, x in enumerate(load) if x]
    if not need:
        return 0
    alone = [c * max(-(-load[d] // cap[d]) for d in need)
             for cap, c in zip(caps, cost) if all(cap[d] for d in need)]
    if alone:
        return min(alone)
    return sum(min(c * -(-load[d] // cap[d]) for cap, c in zip(caps, cost) if cap[d])
               for d in need)


class CoverSolver:
    """Cheapest integer cover of a load by instance types, memoized on (load, prices).

    ``caps`` is [J, D] integer units; a key's prices are $/h per type (inf: unavailable).
    ``settle`` bounds a key in integers (fluid rate, best single-type cover); ``refine``
    runs the MILP on an open key for at most ``solve_det`` deterministic seconds while
    ``budget_det`` lasts, and keeps the solver's proven bound when it does not finish, or
    the LP relaxation's (rounded up to the costs' lattice) when that is higher or the
    budget is spent. Values are $/h, rounded down to 1e-9 $/h so that they never exceed
    the true optimum."""

    def __init__(self, caps: np.ndarray, solver: str = DEFAULT_SOLVER,
                 shortcut: bool = True, solve_det: float = SOLVE_DET,
                 budget_det: float = math.inf) -> None:
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
        self.solve_det = solve_det
        self.budget_det = budget_det
        self.det_used = 0.0
        self.memo: dict[tuple, Cover] = {}
        self.solves = 0
        self.shortcuts = 0  # keys settled without a solver (see settle)
        self.refined: set[tuple] = set()

    def key(self, load: tuple[int, ...], prices: tuple[float, ...]) -> tuple:
        return tuple(-(-x // g) for x, g in zip(load, self.unit)), prices

    def __call__(self, load: tuple[int, ...], prices: tuple[float, ...]) -> float:
        """The key's lower bound in $/h, refined by the solver if the budget allows."""
        key = self.key(load, prices)
        self.settle(key)
        return self.refine(key).lb / PRICE_SCALE

    def _types(self, prices):
        avail = [j for j, p in enumerate(prices) if math.isfinite(p)]
        cost = _int_prices(prices[j] for j in avail)
        return [self.caps[j] for j in avail], cost

    def settle(self, key: tuple) -> Cover:
        """The key's cover from integer arithmetic alone (memoized): exact when the best
        single-type cover costs no more than the load's fluid rate in some dimension d
        (every cover costs at least that), else open between that rate (rounded up to the
        costs' lattice) and the best single-type cover."""
        c = self.memo.get(key)
        if c is not None:
            return c
        load, prices = key
        if not any(load):
            c = self.memo[key] = Cover(0, 0, EXACT)
            return c
        caps, cost = self._types(prices)
        best = simple_cover(caps, cost, load)
        fluid = 0
        for d, need in enumerate(load):
            if not need:
                continue
            # (types without room in d do not bound it: best * 0 <= need * k)
            if self.shortcut and all(best * cap[d] <= need * k for cap, k in zip(caps, cost)):
                self.shortcuts += 1
                c = self.memo[key] = Cover(best, best, EXACT)
                return c
            # need * min_j cost_j / cap_jd, rounded down (types without d cannot cover it)
            fluid = max(fluid, min((need * k // cap[d] for cap, k in zip(caps, cost) if cap[d]),
                                   default=0))
        c = self.memo[key] = Cover(min(self._lattice(cost, fluid), best), best, LP)
        return c

    @staticmethod
    def _lattice(cost: list[int], v: float) -> int:
        """The least multiple of gcd(costs) >= v: every cover costs such a multiple."""
        g = math.gcd(*cost)
        return max(0, g * math.ceil(v / g))

    def refine(self, key: tuple) -> Cover:
        """Settle an open key: the MILP within the per-solve and total budgets, and where it
        does not prove optimality (or the budget is spent) the LP relaxation as well."""
        c = self.settle(key)
        if c.how == EXACT or key in self.refined:
            return c
        self.refined.add(key)
        load, prices = key
        caps, cost = self._types(prices)
        lo, hi = c.lb, c.ub
        left = self.budget_det - self.det_used
        if self.solver == "scip" or left > 0:
            ubs = [max(-(-x // k) if k else 0 for x, k in zip(load, cap)) for cap in caps]
            if self.solver == "cp-sat":
                s_lo, s_hi, det = _cp_sat(load, caps, cost, ubs, min(self.solve_det, left))
                self.det_used += det
            else:
                s_lo = s_hi = _scip(load, caps, cost, ubs)
            self.solves += 1
            lo = max(lo, self._lattice(cost, s_lo))
            hi = hi if s_hi is None else min(hi, s_hi)
            how = TIME_LIMITED
        else:
            how = LP
        if lo < hi:
            lp, r_hi = relax(np.array(caps, dtype=np.int64), np.array(cost, dtype=np.int64),
                             np.array(load, dtype=np.int64))
            lo, hi = max(lo, self._lattice(cost, lp * (1 - 1e-9))), min(hi, r_hi)
        c = self.memo[key] = Cover(min(lo, hi), hi, EXACT if lo >= hi else how)
        return c


@lru_cache(maxsize=1)
def _model_class():
    """CpModel without the pre-PEP 8 aliases: OR-Tools >= 9.12 makes them in every
    ``CpModel()`` (a walk over ``dir(self)``, ~2 ms, as long as a solve of these models);
    nothing here calls them, and the model built, hence the solve, is the same."""
    from ortools.sat.python import cp_model

    class Model(cp_model.CpModel):
        def _add_pre_pep8_methods(self) -> None:
            pass

    return Model


def _cp_sat(load, caps, cost, ub, det_limit: float) -> tuple[int, int | None, float]:
    """CP-SAT on one key: (proven lower bound, best cover or None, deterministic time)."""
    return _cp_sat_once(tuple(load), tuple(map(tuple, caps)), tuple(cost), tuple(ub),
                        det_limit)


#: solves remembered across replays in one process: one worker and a deterministic time
#: limit make a solve a function of its model and limit (what keeps the bound a function of
#: the replay), so a repeat is answered from here, the same to the bit. Replays of one
#: trace under several schedulers, or twice, share many slot loads (half of them in
#: ``compare`` on a synthetic day)
SOLVE_CACHE = 8192


@lru_cache(maxsize=SOLVE_CACHE)
def _cp_sat_once(load, caps, cost, ub, det_limit: float) -> tuple[int, int | None, float]:
    from ortools.sat.python import cp_model

    m = _model_class()()
    xs = [m.new_int_var(0, u, f"x{j}") for j, u in enumerate(ub)]
    for d, need in enumerate(load):
        if need:
            m.add(sum(cap[d] * x for cap, x in zip(caps, xs)) >= need)
    m.minimize(sum(c * x for c, x in zip(cost, xs)))
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1  # tiny models: one worker is fastest and deterministic
    s.parameters.cp_model_presolve = False  # presolve costs more than the search here
    # CP-SAT's default installs a SIGINT handler and leaves the process without Python's:
    # Ctrl-C would be swallowed as a time limit, then ignored (issue 22)
    s.parameters.catch_sigint_signal = False
    s.parameters.max_deterministic_time = det_limit
    st = s.solve(m)
    det = s.deterministic_time
    if st == cp_model.OPTIMAL:
        v = int(round(s.objective_value))
        return v, v, det
    if st in (cp_model.FEASIBLE, cp_model.UNKNOWN):
        # the proven bound, rounded down: a float just under an integer stays below it
        lo = max(0, math.floor(s.best_objective_bound))
        return lo, int(round(s.objective_value)) if st == cp_model.FEASIBLE else None, det
    raise RuntimeError(f"CP-SAT failed on a cover that exists ({s.status_name(st)})")


def _scip(load, caps, cost, ub) -> int:
    """SCIP through pywraplp, to optimality: the reference the tests compare CP-SAT with."""
    from ortools.linear_solver import pywraplp

    s = pywraplp.Solver.CreateSolver("SCIP")
    if s is None:
        raise RuntimeError("OR-Tools has no SCIP backend here")
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(params.RELATIVE_MIP_GAP, 0.0)  # default 1e-4: not exact
    xs = [s.IntVar(0, u, f"x{j}") for j, u in enumerate(ub)]
    for d, need in enumerate(load):
        if need:
            s.Add(sum(cap[d] * x for cap, x in zip(caps, xs)) >= need)
    s.Minimize(sum(c * x for c, x in zip(cost, xs)))
    if s.Solve(params) != pywraplp.Solver.OPTIMAL:
        raise RuntimeError("SCIP did not prove optimality")
    # integer costs: the optimum is an integer; the dual bound, rounded up, is it
    return math.ceil(s.Objective().BestBound() - 1e-6)


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
                        solver: str = DEFAULT_SOLVER, stats: dict | None = None,
                        budget_det: float | None = None) -> float:
    """The integer lower bound in dollars over run segments [starts, ends) with per-segment
    integer requests ``reqs`` [N, D]; ``rho_times``/``rho`` as from
    ``cheapest_unit_prices`` over the same markets (the fluid part). ``budget_det``: CP-SAT's
    deterministic seconds for all solves (default: BUDGET_DET + BUDGET_DET_PER_SEGMENT per
    segment). ``stats``, if given, receives how each slot was settled and how tight the
    bound proved (see ``_stats``)."""
    markets = tuple(markets)
    if starts.size == 0:
        if stats is not None:
            stats.update(kind=EXACT, slots=0, keys=0, solves=0)
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
    if budget_det is None:
        budget_det = BUDGET_DET + BUDGET_DET_PER_SEGMENT * starts.size
    cover = CoverSolver(caps, solver, budget_det=budget_det)
    # one key per distinct (least load, prices) row, settled in the order of its first slot:
    # a replay of months has hundreds of thousands of slots and a handful of distinct rows
    busy_slots = np.flatnonzero(has)
    rows = np.concatenate([least[busy_slots].astype(np.float64), pmin[busy_slots]], axis=1)
    first = inverse = np.zeros(0, dtype=np.int64)
    if rows.size:  # distinct rows among the runs of equal ones (a long task: one long run)
        new = np.ones(len(rows), dtype=bool)
        new[1:] = (rows[1:] != rows[:-1]).any(axis=1)
        runs = np.flatnonzero(new)
        _, first, inverse = np.unique(rows[runs], axis=0, return_index=True,
                                      return_inverse=True)
        first, inverse = runs[first], inverse.reshape(-1)[np.cumsum(new) - 1]
    row_key: list = [None] * first.size
    keys: dict = {}  # the distinct keys, in the order of their first slot
    for u in np.argsort(first, kind="stable").tolist():
        k = int(busy_slots[first[u]])
        key = row_key[u] = cover.key(tuple(least[k].tolist()), tuple(pmin[k].tolist()))
        cover.settle(key)
        keys.setdefault(key, None)
    # the budget goes first where the gap between the LP's bound and the best cover, times
    # the time it is paid, is largest: where a solve can raise the bound most
    order = sorted(keys, key=lambda q: cover.memo[q].ub)
    for key in order:
        cover.refine(key)
    rate = np.zeros(nslots)
    row_cover = [cover.memo[key] for key in row_key]
    rate[busy_slots] = np.array([c.lb for c in row_cover], dtype=np.float64)[inverse] \
        / PRICE_SCALE

    piece_rate = np.maximum(np.where(busy, rate[slot], 0.0), fluid)
    if stats is not None:
        stats.update(_stats([row_cover[u] for u in inverse.tolist()], cover, solver))
        stats.update(slots=int(has.sum()), segments=int(starts.size))
    return float(np.sum(piece_rate * dt) / 3600.0)


def _stats(slots: list[Cover], cover: CoverSolver, solver: str) -> dict:
    """How the busy slots were settled and how tight the bound proved. ``kind``: "exact"
    when every slot's cover is proven optimal, else "proven-bound" (a valid bound below the
    best cover found in some slot). Gaps: (best cover - bound) / best cover, per slot. No
    wall-clock figures: a summary is a function of the replay (benchmarks time the bound)."""
    how = [c.how for c in slots]
    gaps = [(c.ub - c.lb) / c.ub if c.ub else 0.0 for c in slots]
    return {
        "kind": EXACT if all(h == EXACT for h in how) else "proven-bound",
        "proven_optimal_slots": how.count(EXACT),
        "time_limited_slots": how.count(TIME_LIMITED),
        "lp_slots": how.count(LP),
        "gap_max": round(max(gaps, default=0.0), 6),
        "gap_mean": round(sum(gaps) / len(gaps), 6) if gaps else 0.0,
        "keys": len(cover.memo), "solves": cover.solves, "shortcuts": cover.shortcuts,
        "solver": solver, "det_used": round(cover.det_used, 4),
        "det_budget": None if math.isinf(cover.budget_det) else round(cover.budget_det, 4),
    }
