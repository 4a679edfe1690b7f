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
    try:
        from ortools.linear_solver import pywraplp
    except ImportError as exc:  # the solver extra
        raise ConfigError("stratus advise needs OR-Tools (pip install 'stratus-vc[solver]')"
                          ) from exc
    solver = pywraplp.Solver.CreateSolver("SCIP") or pywraplp.Solver.CreateSolver("CBC")
    if solver is None:
        raise ConfigError("OR-Tools has no MILP solver (SCIP or CBC) in this build")
    solver.SetTimeLimit(int(time_limit_s * 1000))
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
