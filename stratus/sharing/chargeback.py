"""Who pays what for a shared cluster (004 §4.2). Both rules are budget-balanced: the
users' charges sum to the cluster's total cost (spec B.3)."""

from __future__ import annotations

import numpy as np

from stratus.base.errors import ConfigError
from stratus.sharing.cluster import PRICINGS, ShareRun, per_user_wait


def charges(sr: ShareRun, pricing: str) -> tuple[np.ndarray, str | None]:
    """Per user code: the charge, and a note when an edge case decided it.

    socialist (004 §4.2.1): every user pays the cluster's normalized price on their
    on-demand-equivalent use, charge_u = π Σ_{j∈u} OD_j.
    capitalist (004 §4.2.2): on-demand jobs pay their own cost; reserved jobs pay the
    reserved price "normalized by utilization of the reserved resources", ρ per
    core-second with ρ = Cres / Σ_{j on R} c_j rt_j."""
    if pricing not in PRICINGS:
        raise ConfigError(f"--pricing takes socialist or capitalist, got {pricing!r}")
    w = sr.workload
    k = len(w.users)
    od_u = np.bincount(w.user, sr.od_cost, minlength=k)
    od_total = float(sr.od_cost.sum())
    note = None
    if pricing == "socialist":
        if od_total <= 0:
            return np.zeros(k), "no on-demand-equivalent use: nothing to charge"
        # π Σ OD_u, written as Ctot's share so the sum is Ctot up to rounding
        return sr.total_cost * (od_u / od_total), None
    rcs = sr.reserved_core_seconds
    used = float(rcs.sum())
    own = np.bincount(w.user, np.where(sr.ondemand, sr.od_cost, 0.0), minlength=k)
    if sr.reserved_cost == 0:
        return own, None
    if used > 0:
        rho = sr.reserved_cost / used
        return own + rho * np.bincount(w.user, rcs, minlength=k), None
    # spec B.3 edge case: reserved VMs nobody used; ρ is undefined
    note = "reserved capacity was never used: its cost is spread pro rata to OD_j"
    if od_total <= 0:
        return own, note + " (no OD_j either: unallocated)"
    return own + sr.reserved_cost * (od_u / od_total), note


def per_user(sr: ShareRun, pricing: str, wait_metric: str = "ratio-of-means") -> tuple[list, str | None]:
    """Per user with jobs here: jobs, OD equivalent, charge, π_u, waits (spec B.13)."""
    w = sr.workload
    k = len(w.users)
    ch, note = charges(sr, pricing)
    cnt = np.bincount(w.user, minlength=k)
    od_u = np.bincount(w.user, sr.od_cost, minlength=k)
    mw = np.bincount(w.user, sr.wait, minlength=k)
    mr = np.bincount(w.user, w.runtime, minlength=k)
    ratio = per_user_wait(sr, wait_metric)
    out = []
    for u in np.flatnonzero(cnt):
        out.append({"user": w.users[u], "jobs": int(cnt[u]), "od_equiv": round(float(od_u[u]), 6),
                    "charge": round(float(ch[u]), 6),
                    "price": round(float(ch[u] / od_u[u]), 9) if od_u[u] > 0 else None,
                    "mean_wait_s": round(float(mw[u] / cnt[u]), 4),
                    "mean_runtime_s": round(float(mr[u] / cnt[u]), 4),
                    "wait_ratio": round(float(ratio[u]), 6)})
    return out, note


def job_charges(sr: ShareRun, pricing: str) -> np.ndarray:
    """Per job, the same rules: socialist π OD_j; capitalist OD_j on-demand, ρ c_j rt_j on
    reserved capacity (the per-user charges are these summed by user)."""
    if pricing not in PRICINGS:
        raise ConfigError(f"--pricing takes socialist or capitalist, got {pricing!r}")
    od_total = float(sr.od_cost.sum())
    if pricing == "socialist":
        return sr.total_cost * sr.od_cost / od_total if od_total > 0 else np.zeros_like(sr.od_cost)
    own = np.where(sr.ondemand, sr.od_cost, 0.0)
    rcs = sr.reserved_core_seconds
    used = float(rcs.sum())
    if sr.reserved_cost == 0:
        return own
    if used > 0:
        return own + sr.reserved_cost / used * rcs
    return own + (sr.reserved_cost * sr.od_cost / od_total if od_total > 0 else 0.0)
