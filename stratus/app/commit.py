"""``stratus advise --commit reserved|savings-plan``: what to commit to, by simulating the
unified replay (issue 23, item 5): the scheduler, the waiting policy and the commitment in
one replay, the bill the thing to minimize.

1. The start: OR-Tools over the trace's load curve in the fluid model (every task starts on
   arrival, work is divisible): the reserved mix (``milp_mix``, count per type, several
   dimensions) or the savings-plan level (``milp_commitment``), uncovered load priced at
   the replay market's mean prices over the window (``unit_prices``).
2. The search, along the curve's shape rather than over a grid: the bill as a function of
   the scale a of the start's commitment (a = 0: none; 1: the MILP's) is near convex in
   the marginal analysis of paper 000 §2-3 (each further server saves less than the last).
   A batch of a in {0, 0.5, 1, 1.5} first, then halving steps around the cheapest point
   (both neighbours; at a = 0 the two nearest points above), two replays at a time
   (``--jobs``), down to steps of 1/32 or until ``--replays`` are spent. Where the market makes the fluid optimum zero (spot
   cheaper than a reservation at the fluid load), the direction is the on-demand optimum's
   and the MILP's own answer is reported as zero.
"""

from __future__ import annotations

import numpy as np

from stratus.app import spec as S
from stratus.base.errors import ConfigError

GRID = (0.0, 0.5, 1.0, 1.5)  # the first batch of scales
MIN_STEP = 1.0 / 32  # finer than this, the search stops (3% of the start's commitment)


def _curves(frame, catalog, slot_s: float):
    """(load per slot and dimension, slot length, type capacities) in natural units."""
    from stratus.waiting.advisor import load_curve

    cols = ["cpu", "mem_gib"] + (["gpus"] if len(catalog.dims) > 2 else [])
    submit = frame["submit_s"].to_numpy(np.float64)
    runtime = frame["runtime_s"].to_numpy(np.float64)
    curves = [load_curve(submit, runtime, frame[c].to_numpy(np.float64), slot_s)[0]
              if c in frame.columns else np.zeros(1) for c in cols]
    caps = np.array([[t.vcpu, t.mem_gib] + ([t.gpus] if len(cols) > 2 else [])
                     for t in catalog], dtype=np.float64)
    return np.column_stack(curves), caps, float(submit.min()), float((submit + runtime).max())


def _mean_prices(prices, catalog, market: str, t0: float, t1: float) -> np.ndarray:
    hours = max(t1 - t0, 1.0) / 3600.0
    return np.array([prices.cost(t.name, market, t0, max(t1, t0 + 1.0)) / hours
                     for t in catalog])


def advise_commit(spec: S.CommitSpec, fitted, history, warmup_h, on_point=None) -> dict:
    """The search of the module docstring over ``fitted`` (the window, fitted to the
    catalog; ``history()`` and ``warmup_h`` for a learning estimator, as a replay takes
    them); ``on_point(point)`` as each replay ends."""
    from stratus.app.registry import get_spec
    from stratus.app.runs import default_jobs, replay_config, run_cells
    from stratus.commitments.reserved import reserved_rate, reserved_text
    from stratus.waiting.advisor import milp_commitment, milp_mix, unit_prices

    sched = get_spec(spec.scheduler)
    cfg = replay_config(spec)
    catalog, prices = cfg.catalog, cfg.prices
    if len(fitted.frame) == 0:
        raise ConfigError("the trace window has no tasks: nothing to commit to")
    load, caps, t0, t1 = _curves(fitted.frame, catalog, spec.slot)
    od = np.array([t.ondemand_hourly for t in catalog])
    market = _mean_prices(prices, catalog, spec.market, t0, t1)
    unit_m, unit_od = unit_prices(caps, market), unit_prices(caps, od)
    names = [t.name for t in catalog]

    if spec.commit == "reserved":
        rates = np.array([reserved_rate(t, spec.reserved_discount) for t in catalog])
        milp = milp_mix(load, spec.slot, caps, rates, unit_m)
        direction = milp if any(milp) else milp_mix(load, spec.slot, caps, rates, unit_od)

        def key(a: float):
            return tuple(int(round(a * n)) for n in direction)

        def changes(k) -> dict:
            mix = tuple((names[i], n) for i, n in enumerate(k) if n > 0)
            if not mix:  # nothing reserved: nothing to wait for either
                return {"reserved": None, "waiting": None}
            return {"reserved": reserved_text(mix)}

        def label(k) -> str:
            return reserved_text(tuple((names[i], n) for i, n in enumerate(k) if n > 0))
        milp_key = tuple(milp)
        answer = {"milp_mix": label(milp_key) or "none",
                  "direction": label(tuple(direction)) or "none"}
    else:
        discount = spec.plan_discount
        usage = load @ unit_od  # $/h of the load at on-demand prices
        ratio = float(market.sum() / od.sum())
        c_milp = milp_commitment(usage, spec.slot, discount, ratio)
        c_dir = c_milp if c_milp > 1e-6 else milp_commitment(usage, spec.slot, discount, 1.0)

        def key(a: float):
            return round(a * c_dir, 2)

        def changes(k) -> dict:
            return {"savings_plan": f"{k:g}:{discount:g}" if k > 0 else None}

        def label(k) -> str:
            return f"{k:g} $/h"
        milp_key = round(c_milp, 2)
        answer = {"milp_usd_per_hour": round(c_milp, 4),
                  "direction_usd_per_hour": round(c_dir, 4), "discount": discount}

    seen: dict = {}  # commitment key -> (scale, summary)
    jobs = spec.jobs or default_jobs()

    def run(scales) -> int:
        """Replay the scales whose commitment is new (within the budget); how many ran."""
        todo: dict = {}
        for a in scales:
            k = key(a)
            if a >= 0 and k not in seen and k not in todo \
                    and len(seen) + len(todo) < spec.replays:
                todo[k] = a
        ks = list(todo)

        def done(i, summary):
            if on_point is not None:
                on_point(_point(label(ks[i]), todo[ks[i]], summary))
        cells = [(sched, changes(k)) for k in ks]
        for k, summary in zip(ks, run_cells(spec, fitted, cells, history, warmup_h, jobs,
                                            done) if ks else ()):
            seen[k] = (todo[k], summary)
        return len(ks)

    run(GRID)
    step = GRID[1]
    while len(seen) < spec.replays and step >= MIN_STEP:
        a = seen[min(seen, key=lambda k: seen[k][1]["total_cost_usd"])][0]
        if a >= max(v[0] for v in seen.values()):  # cheapest at the largest scale: go on
            if not run([a + step, a + 2 * step]):
                break
        else:  # both neighbours at half the step; at scale 0, the two nearest above it
            step /= 2.0
            if a - step >= 0:
                run([a - step, a + step])
            else:
                run([a + step / 2.0, a + step])
                step /= 2.0
    pts = sorted((_point(label(k), a, s) for k, (a, s) in seen.items()),
                 key=lambda p: p["scale"])
    best = min(pts, key=lambda p: p["total_cost_usd"])
    # the MILP's answer is scale 1 of its own direction, or 0 (both in GRID)
    milp_pt = _point(label(milp_key), seen[milp_key][0], seen[milp_key][1])
    return {"commit": spec.commit, "scheduler": sched.name, "waiting": spec.waiting,
            "trace": fitted.name, "tasks": int(len(fitted.frame)), "market": spec.market,
            "catalog": catalog.name, "slot_s": spec.slot, **answer,
            "optimum": best, "at_milp": milp_pt,
            "milp_extra_cost_pct": round(100.0 * (milp_pt["total_cost_usd"]
                                                  / best["total_cost_usd"] - 1.0), 4)
            if best["total_cost_usd"] > 0 else None,
            "replays": len(seen),
            "unit_prices_market": [round(float(x), 6) for x in unit_m],
            "points": pts}


def _point(label: str, scale, s: dict) -> dict:
    """One replay of the search: the commitment, the bill and its parts."""
    w = s.get("waiting") or {}
    commit = s.get("reserved_cost_usd", 0.0) + s.get("savings_plan_commitment_usd", 0.0)
    util = s.get("reserved_utilization") or {}
    return {"commitment": label or "none", "scale": scale,
            "total_cost_usd": s["total_cost_usd"],
            "commitment_cost_usd": round(commit, 4),
            "cloud_cost_usd": round(s["total_cost_usd"] - commit, 4),
            "reserved_utilization": util.get("cpu"),
            "mean_wait_s": w.get("mean_wait_s"),
            "ran_on_cloud_fraction": s.get("ran_on_cloud_fraction"),
            "tasks_unfinished": s.get("tasks_unfinished", 0),
            "wall_seconds": s.get("wall_seconds")}


def plot_commit(doc: dict, out, fmt: str = "png") -> None:
    """The bill against the commitment, its parts, the optimum and the MILP's answer (the
    caller writes through a temporary name: stratus.app.outputs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [p for p in doc["points"] if p["scale"] is not None]
    x = [p["commitment_cost_usd"] for p in pts]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(x, [p["total_cost_usd"] for p in pts], "o-", label="total bill")
    ax.plot(x, [p["cloud_cost_usd"] for p in pts], "s--", ms=3, label="cloud part")
    ax.plot(x, x, ":", color="gray", label="commitment part")
    o, m = doc["optimum"], doc["at_milp"]
    ax.plot([o["commitment_cost_usd"]], [o["total_cost_usd"]], "k*", ms=12,
            label=f"optimum: {o['commitment']}")
    ax.plot([m["commitment_cost_usd"]], [m["total_cost_usd"]], "rx", ms=9,
            label=f"MILP: {m['commitment']}")
    ax.set_xlabel(f"commitment ({doc['commit']}) cost over the window, $")
    ax.set_ylabel("$ over the window")
    ax.legend(fontsize=7)
    ax.set_title(f"{doc['scheduler']} on {doc['trace']}"
                 + (f", waiting {doc['waiting']}" if doc.get("waiting") else ""), fontsize=9)
    fig.tight_layout()
    try:
        fig.savefig(out, format=fmt, dpi=100)
    finally:
        plt.close(fig)


__all__ = ["advise_commit", "plot_commit"]
