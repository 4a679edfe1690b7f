"""How much to reserve: a MILP over the load curve for a start, then marginal analysis by
simulating the pool on the trace itself (paper 000 §2-3: buy the s-th server while its
work saves more on demand than it costs).

The MILP sees the trace as if no job ever waited and work were fluid: in each time slot
the cores busy above s·C are bought on demand. It ignores fragmentation, queueing and the
waiting policy, which is why the simulation has the last word; the report says how far
apart the two were.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stratus.base.errors import ConfigError


def load_curve(submit: np.ndarray, runtime: np.ndarray, cpu: np.ndarray,
               slot_s: float) -> tuple[np.ndarray, float]:
    """Mean busy cores per slot if every job started on arrival, and the slot length."""
    if len(submit) == 0:
        return np.zeros(0), slot_s
    t0 = float(submit.min())
    end = float((submit + runtime).max())
    k = max(1, int(math.ceil((end - t0) / slot_s)))
    edges = t0 + slot_s * np.arange(k + 1)
    # core-seconds of each job in each slot, by the running integral of busy cores
    times = np.concatenate([submit, submit + runtime])
    deltas = np.concatenate([cpu, -cpu])
    order = np.argsort(times, kind="stable")
    times, deltas = times[order], deltas[order]
    busy = np.cumsum(deltas)
    area = np.concatenate([[0.0], np.cumsum(busy[:-1] * np.diff(times))])
    at = np.interp(edges, times, area)
    return np.diff(at) / slot_s, slot_s


def milp_servers(load: np.ndarray, slot_s: float, cores: float, reserved_hourly: float,
                 core_hour_ondemand: float, time_limit_s: float = 20.0) -> int:
    """min over integer s ≥ 0 of s·rate·T + Σ_k po_core·max(0, L_k - s·C)·Δt, by OR-Tools."""
    solver, pywraplp = _solver(time_limit_s)
    hours = slot_s / 3600.0
    # slots with the same load are one variable with a weight
    levels, weight = np.unique(np.round(load, 6), return_counts=True)
    top = int(math.ceil(levels.max() / cores)) if levels.size else 0
    s = solver.IntVar(0, max(top, 0), "s")
    excess = [solver.NumVar(0, solver.infinity(), f"e{i}") for i in range(levels.size)]
    for i, lv in enumerate(levels):
        solver.Add(excess[i] >= float(lv) - cores * s)
    horizon_h = hours * len(load)
    solver.Minimize(reserved_hourly * horizon_h * s
                    + sum(core_hour_ondemand * hours * float(w) * e
                          for w, e in zip(weight, excess)))
    status = solver.Solve()
    if status not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        raise ConfigError("the reservation MILP found no solution")
    return int(round(s.solution_value()))


@dataclass(frozen=True)
class Point:
    servers: int
    total_cost_usd: float
    normalized_price: float | None
    mean_wait_s: float
    on_demand_fraction: float


def search(cost_at: Callable[[int], Point], start: int, lo: int = 0,
           hi: int | None = None) -> tuple[int, dict[int, Point]]:
    """Marginal analysis by simulation: walk from ``start`` towards cheaper s, one server
    at a time, until both neighbours cost more. Returns the optimum and every point seen."""
    seen: dict[int, Point] = {}

    def at(s: int) -> Point:
        if s not in seen:
            seen[s] = cost_at(s)
        return seen[s]

    s = max(lo, start)
    while True:
        here = at(s).total_cost_usd
        down = at(s - 1).total_cost_usd if s - 1 >= lo else math.inf
        up = at(s + 1).total_cost_usd if hi is None or s + 1 <= hi else math.inf
        if down < here and down <= up:
            s -= 1
        elif up < here:
            s += 1
        else:
            return s, seen


def _solver(time_limit_s: float):
    try:
        from ortools.linear_solver import pywraplp
    except ImportError as exc:  # the solver extra
        raise ConfigError("stratus advise needs OR-Tools (pip install 'stratus-vc[solver]')"
                          ) from exc
    solver = pywraplp.Solver.CreateSolver("SCIP") or pywraplp.Solver.CreateSolver("CBC")
    if solver is None:
        raise ConfigError("OR-Tools has no MILP solver (SCIP or CBC) in this build")
    solver.SetTimeLimit(int(time_limit_s * 1000))
    return solver, pywraplp


def unit_prices(caps: np.ndarray, hourly: np.ndarray) -> np.ndarray:
    """$/h per unit of each dimension, a non-negative least-squares fit of the types'
    prices (a VM's price ~ a x vCPU + b x GiB): what the cloud charges for load the
    commitment does not cover, in the fluid model."""
    caps = np.asarray(caps, dtype=np.float64)
    hourly = np.asarray(hourly, dtype=np.float64)
    use = list(range(caps.shape[1]))
    while True:
        coef, *_ = np.linalg.lstsq(caps[:, use], hourly, rcond=None)
        if (coef >= 0).all() or len(use) == 1:
            out = np.zeros(caps.shape[1])
            out[use] = np.maximum(coef, 0.0)
            return out
        use = [u for u, c in zip(use, coef) if c > 0] or [use[int(np.argmax(coef))]]


TIE = 1e-3  # milp_mix: one more instance costs this share of the cheapest one (ties;
# above the solver's relative gap, far below any real difference)


def milp_mix(load: np.ndarray, slot_s: float, caps: np.ndarray, rates: np.ndarray,
             unit: np.ndarray, time_limit_s: float = 30.0) -> list[int]:
    """Reserved instances per type over a load curve (paper 000 §2's reservation problem
    with several types and dimensions): min over integers n_i >= 0 of
    Σ_i n_i·rate_i·T + Σ_k Δt·Σ_d unit_d·max(0, L_kd - Σ_i n_i·cap_id), by OR-Tools.
    ``load``: (slots, dims) mean busy amounts; ``caps``: (types, dims); ``rates``: $/h of
    a reserved one; ``unit``: $/h per unit of load left to the cloud. Of equal bills, the
    one with the fewest instances."""
    solver, pywraplp = _solver(time_limit_s)
    load = np.asarray(load, dtype=np.float64).reshape(len(load), -1)
    hours = slot_s / 3600.0
    levels, weight = np.unique(np.round(load, 6), axis=0, return_counts=True)
    top = levels.max(axis=0) if levels.size else np.zeros(load.shape[1])
    n = []
    for i, cap in enumerate(caps):
        need = max((math.ceil(t / c) for t, c in zip(top, cap) if c > 0), default=0)
        n.append(solver.IntVar(0, max(need, 0), f"n{i}"))
    # ties (a family priced per vCPU, m4's) go to fewer, larger instances, as §3.3's
    # scaler breaks them: each instance costs TIE of the cheapest one's horizon more
    horizon_h = hours * len(load)
    per_instance = TIE * float(min(rates)) * horizon_h
    cost = sum((float(r) * horizon_h + per_instance) * v for r, v in zip(rates, n))
    for k, lv in enumerate(levels):
        for d, amount in enumerate(lv):
            if unit[d] <= 0 or amount <= 0:
                continue
            e = solver.NumVar(0, solver.infinity(), f"e{k}_{d}")
            solver.Add(e >= float(amount) - sum(float(c[d]) * v for c, v in zip(caps, n)))
            cost += float(unit[d]) * hours * float(weight[k]) * e
    solver.Minimize(cost)
    status = solver.Solve()
    if status not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        raise ConfigError("the reservation MILP found no solution")
    return [int(round(v.solution_value())) for v in n]


def milp_commitment(usage: np.ndarray, slot_s: float, discount: float, ratio: float,
                    time_limit_s: float = 30.0) -> float:
    """A savings-plan level C ($/h) over a curve of on-demand-priced usage U_k ($/h): min
    C·T + Σ_k Δt·ratio·max(0, U_k - C/(1 - discount)); ``ratio`` is what uncovered usage
    costs per on-demand dollar in the replay's market (1 on demand, the spot discount on
    spot). A linear program (OR-Tools)."""
    solver, pywraplp = _solver(time_limit_s)
    hours = slot_s / 3600.0
    levels, weight = np.unique(np.round(np.asarray(usage, dtype=np.float64), 6),
                               return_counts=True)
    c = solver.NumVar(0, float(levels.max()) if levels.size else 0.0, "C")
    cost = c * hours * len(usage)
    for lv, w in zip(levels, weight):
        e = solver.NumVar(0, solver.infinity(), "e")
        solver.Add(e >= float(lv) - c * (1.0 / (1.0 - discount)))
        cost += ratio * hours * float(w) * e
    solver.Minimize(cost)
    status = solver.Solve()
    if status not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        raise ConfigError("the savings-plan program found no solution")
    return float(c.solution_value())
