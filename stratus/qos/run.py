"""One experiment of paper 001: a workload through QoPS, VQoPS or DVQoPS, summarized as
the spec's JSON (A.12) with a per-job table."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stratus.qos.jobs import Workload, value
from stratus.qos.schedule import EPS
from stratus.qos.sim import HOUR, Config, Sim


@dataclass
class Outcome:
    summary: dict
    jobs: dict  # column -> list, one row per job of the workload


def simulate(wl: Workload, cfg: Config) -> Sim:
    sim = Sim(wl, cfg)
    sub = wl.submit
    for i in range(len(wl)):
        sim.advance(sub[i])
        sim.arrive(i)
    sim.advance(float("inf"))
    return sim


def oc_var_avg(traj) -> float | None:
    """Mean, over sliding groups of 5 consecutive OC choices, of their population variance
    (spec A.5 "Diagnostics", Table 2)."""
    fs = [f for _, f in traj]
    if len(fs) < 5:
        return None
    return float(np.mean([np.var(fs[i:i + 5]) for i in range(len(fs) - 4)]))


def load_var(wl: Workload, window_h: float) -> float | None:
    """Population variance of the offered load Σ p e / (P W) over consecutive full
    W-long segments from the first submit (the trailing partial one dropped)."""
    w = window_h * HOUR
    sub = np.asarray(wl.submit)
    t0 = sub[0]
    k = int((sub[-1] - t0) // w)
    if k < 2:
        return None
    seg = ((sub - t0) // w).astype(np.int64)
    work = np.asarray(wl.size)
    loads = np.bincount(seg[seg < k], weights=work[seg < k], minlength=k) / (wl.P * w)
    return float(np.var(loads))


def _r(x, nd=6):
    return None if x is None else round(float(x), nd)


def run(wl: Workload, cfg: Config) -> Outcome:
    sim = simulate(wl, cfg)
    n = len(wl)
    acc = np.zeros(n, dtype=bool)
    acc[sim.accepted] = True
    start = np.full(n, np.nan)
    comp = np.full(n, np.nan)
    val = np.zeros(n)
    for j in sim.accepted:
        st = sim.start[j]
        start[j] = st
        c = st + wl.rt[j]
        comp[j] = c
        val[j] = value(c, wl.vmax[j], wl.submit[j], wl.est[j], wl.deadline[j])
    dl = np.asarray(wl.deadline)
    violations = int((comp[acc] > dl[acc] + EPS).sum())
    urg = np.asarray(wl.urgent)
    work = np.asarray(wl.procs, dtype=np.float64) * np.asarray(wl.rt)

    def frac(mask):
        tot = work[mask].sum()
        return _r(work[mask & acc].sum() / tot) if tot > 0 else None

    s = {
        "scheme": cfg.scheme,
        "oc": cfg.oc if cfg.scheme == "vqops" else None,
        "jobs": n,
        "urgent_jobs": int(urg.sum()),
        "normal_jobs": int((~urg).sum()),
        "processors": wl.P,
        "offered_load": _r(wl.info["offered_load"]),
        "accepted": int(acc.sum()),
        "accepted_urgent": int((acc & urg).sum()),
        "accepted_normal": int((acc & ~urg).sum()),
        "accepted_frac": {"all": _r(acc.mean()),
                          "urgent": _r((acc & urg).sum() / urg.sum()) if urg.any() else None,
                          "normal": _r((acc & ~urg).sum() / (~urg).sum()) if (~urg).any()
                          else None},
        "accepted_procsec_frac": {"all": frac(np.ones(n, dtype=bool)), "urgent": frac(urg),
                                  "normal": frac(~urg)},
        "revenue": float(val.sum()),
        "revenue_urgent": float(val[urg].sum()),
        "revenue_normal": float(val[~urg].sum()),
        "max_revenue": float(np.sum(wl.vmax)),
        "deadline_violations": violations,
        "max_processors_used": sim.counts.max_used,
        "overrun_killed": wl.info["overrun_killed"],
        "overrun_extended": wl.info["overrun_extended"],
        "dropped_oversize": wl.info["dropped_oversize"],
        "duplicates": wl.info["duplicates"],
        "compressions": sim.counts.compressions,
        "qops_k": cfg.K,
        "oc_tie": cfg.oc_tie,
        "selection": "first feasible candidate in probe order" if cfg.scheme == "qops"
        else "revenue-maximizing candidate (ties: probe order)",
    }
    # the same keys for every scheme (null where a scheme has no such thing)
    s.update({"dv_window": None, "oc_trajectory": None, "window_trajectory": None,
              "oc_var_avg": None, "load_var": None})
    if cfg.scheme == "dvqops":
        s.update({
            "dv_window": "auto" if cfg.window == "auto" else f"fixed:{cfg.w_init_h:g}",
            "dv_oc_grid": list(cfg.oc_grid), "dv_windows": list(cfg.windows_h),
            "dv_wmax": cfg.wmax_h, "whatif_start": cfg.whatif_start,
            "dv_replay": cfg.replay,
            "oc_trajectory": [[_r(t, 3), f] for t, f in sim.oc_traj],
            "window_trajectory": [[_r(t, 3), w] for t, w in sim.w_traj],
            "oc_var_avg": _r(oc_var_avg(sim.oc_traj[1:]), 9),  # choices, not the initial f
            "load_var": _r(load_var(wl, cfg.w_init_h), 9) if cfg.window == "fixed" else None,
            "whatifs": sim.counts.whatifs, "window_replays": sim.counts.replays,
        })
    jobs = {"job": list(range(n)), "job_id": wl.job_id, "copy": wl.copy, "submit_s": wl.submit,
            "procs": wl.procs, "runtime_s": wl.rt, "estimate_s": wl.est,
            "deadline_s": wl.deadline, "urgent": wl.urgent, "vmax": wl.vmax,
            "accepted": acc.tolist(), "start_s": start.tolist(), "completion_s": comp.tolist(),
            "value": val.tolist()}
    return Outcome(s, jobs)
