"""004's analyses over a shared cluster: the provisioning sweep and N* (§6.1-6.2, Figs.
5-6), user defection over a wait threshold θ (§6.2.2, Figs. 8-10) and flying solo (§4.1.3,
§6.3, Fig. 11). Every point is one run of stratus.sharing.cluster."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from stratus.base.errors import ConfigError
from stratus.sharing.chargeback import charges
from stratus.sharing.cluster import Cluster, Workload, per_user_wait, run, summary

SWEEP_KEYS = ("normalized_price", "mean_wait_s", "max_wait_s", "ondemand_frac_jobs",
              "ondemand_frac_corehours", "reserved_util", "never_fit", "total_cost")


def parse_grid(text: str, option: str = "--reserved") -> list[int]:
    """``A:B:S`` (A to B inclusive by S) or comma-separated whole numbers."""
    try:
        if ":" in text:
            parts = [int(x) for x in text.split(":")]
            if len(parts) != 3 or parts[2] <= 0 or parts[0] < 0 or parts[1] < parts[0]:
                raise ValueError
            vals = list(range(parts[0], parts[1] + 1, parts[2]))
        else:
            vals = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise ConfigError(f"{option} takes A:B:STEP or comma-separated whole numbers >= 0, "
                          f"got {text!r}") from None
    if not vals or min(vals) < 0 or max(vals) > 1_000_000 or len(vals) > 10_000:
        raise ConfigError(f"{option} takes A:B:STEP or comma-separated whole numbers from 0 "
                          f"to 1,000,000 (at most 10,000 of them), got {text!r}")
    return vals


def sweep(w: Workload, base: Cluster, policies: list[str], grid: list[int],
          steady: float = 0.0) -> dict:
    """π(N), waits, on-demand share and utilization per policy; N* = argmin π, ties to the
    smaller N (004 §6.1-6.2, spec B.4)."""
    rows = []
    best = {}
    for p in policies:
        pts = []
        for n in grid:
            s = summary(run(w, replace(base, policy=p, reserved=n)), steady)
            pts.append({"reserved": n, **{k: s[k] for k in SWEEP_KEYS}})
        rows.append({"policy": p, "points": pts})
        ok = [q for q in pts if q["normalized_price"] is not None]
        if ok:
            b = min(ok, key=lambda q: (q["normalized_price"], q["reserved"]))
            best[p] = {"reserved": b["reserved"], "normalized_price": b["normalized_price"],
                       "mean_wait_s": b["mean_wait_s"]}
    return {"grid": grid, "policies": rows, "optimal": best}


def optimal_reserved(w: Workload, base: Cluster, grid: list[int]) -> int:
    return sweep(w, base, [base.policy], grid)["optimal"][base.policy]["reserved"]


def _price_u(sr, pricing: str) -> np.ndarray:
    ch, _ = charges(sr, pricing)
    od_u = np.bincount(sr.workload.user, sr.od_cost, minlength=len(sr.workload.users))
    with np.errstate(invalid="ignore", divide="ignore"):
        return ch / od_u


def defect(w: Workload, c: Cluster, thetas: list[float], pricing: str = "socialist",
           on_price: bool = False, wait_metric: str = "ratio-of-means",
           max_rounds: int = 1000) -> dict:
    """004 §6.2.2, Fig. 9 (spec B.5): users whose mean wait exceeds θ x their mean runtime
    leave for good, the rest are simulated again on the same N and horizon, until nobody
    leaves. Runs are cached by the set of users left (every θ starts from the same one)."""
    cache: dict[frozenset, tuple] = {}

    def at(users: frozenset):
        if users not in cache:
            sr = run(w.of_users(sorted(users)), c)
            cache[users] = (sr, per_user_wait(sr, wait_metric), _price_u(sr, pricing))
        return cache[users]

    everyone = frozenset(int(u) for u in np.unique(w.user))
    out = []
    for theta in thetas:
        users = everyone
        rounds = []
        while True:
            if not users:
                break
            sr, ratio, pu = at(users)
            members = np.array(sorted(users), dtype=np.int64)
            gone = members[ratio[members] > theta]
            if on_price:
                gone = np.union1d(gone, members[pu[members] >= 1.0 - 1e-12])
            pi = sr.normalized_price
            rounds.append({"users": len(users), "defectors": int(len(gone)),
                           "normalized_price": None if pi is None else round(pi, 9)})
            if len(gone) == 0 or len(rounds) >= max_rounds:
                break
            users = users - frozenset(int(u) for u in gone)
        final = rounds[-1]["normalized_price"] if users and rounds else None
        sr_final = at(users)[0] if users else None
        out.append({"theta": None if math.isinf(theta) else theta,
                    "theta_inf": math.isinf(theta),
                    "participation": round(len(users) / len(everyone), 6),
                    "users_left": len(users), "normalized_price": final,
                    "mean_wait_s": round(float(sr_final.wait.mean()), 4)
                    if sr_final is not None and sr_final.workload.n else None,
                    "rounds": len(rounds),  # simulations, the last one with no defector
                    "per_round": rounds})
    sr0, ratio0, pu0 = at(everyone)
    pi0 = sr0.normalized_price
    members = np.array(sorted(everyone), dtype=np.int64)
    jobs_ratio = sr0.wait / sr0.workload.runtime
    return {"policy": c.policy, "reserved": c.reserved, "pricing": pricing,
            "defect_on_price": on_price, "wait_metric": wait_metric,
            "no_defection_price": None if pi0 is None else round(pi0, 9),
            "users": len(everyone),
            # Fig. 8 at this N: the two CDFs' headline shares (spec B-10)
            "share_jobs_wait_over_10x_runtime": round(float((jobs_ratio >= 10).mean()), 6),
            "share_users_wait_over_15x_runtime": round(float((ratio0[members] > 15).mean()), 6),
            # Fig. 10: users paying more than the cluster's average price
            "share_users_price_above_average": None if pi0 is None else
            round(float((pu0[members] > pi0 * (1 + 1e-12)).mean()), 6),
            "thetas": out, "simulations": len(cache)}


def burst_peak(w: Workload, window_s: float = 300.0) -> np.ndarray:
    """Per user code: the most jobs submitted in any 5-minute interval (aligned to T0)."""
    k = len(w.users)
    if w.n == 0:
        return np.zeros(k, dtype=np.int64)
    slot = ((w.submit - w.t0) // window_s).astype(np.int64)
    key = w.user * (int(slot.max()) + 1) + slot
    uniq, cnt = np.unique(key, return_counts=True)
    peak = np.zeros(k, dtype=np.int64)
    np.maximum.at(peak, uniq // (int(slot.max()) + 1), cnt)
    return peak


def solo(w: Workload, c: Cluster, ks: list[int], burst_jobs: int = 10,
         shared: Cluster | None = None, pricing: str = "socialist") -> dict:
    """004 §4.1.3, §6.3, Fig. 11 (spec B.6): each user alone on k reserved units of their
    own, under ``c``'s policy over the full horizon; k*_u = argmin π_u(k) (ties to the
    smaller k; k = 0 is pure on-demand: π = 1, wait 0). Classes are descriptive (spec
    B-13): baseload if k* ≥ 1, else bursty if ≥ ``burst_jobs`` jobs in some 5 minutes,
    else small. ``shared``: the shared cluster to hold each user's solo result against."""
    if 0 not in ks:
        ks = [0, *ks]
    ks = sorted(set(ks))
    peak = burst_peak(w)
    sh_price = sh_wait = None
    sh = None
    if shared is not None:
        sh = run(w, shared)
        sh_price = _price_u(sh, pricing)
        cnt = np.bincount(w.user, minlength=len(w.users))
        with np.errstate(invalid="ignore", divide="ignore"):
            sh_wait = np.bincount(w.user, sh.wait, minlength=len(w.users)) / cnt
    users = []
    for u in np.unique(w.user):
        mine = w.of_users([u])
        curve = []
        for k in ks:
            sr = run(mine, replace(c, reserved=k))
            curve.append({"k": k, "price": round(sr.normalized_price, 9)
                          if sr.normalized_price is not None else None,
                          "mean_wait_s": round(float(sr.wait.mean()), 4)})
        ok = [p for p in curve if p["price"] is not None]
        best = min(ok, key=lambda p: (p["price"], p["k"])) if ok else curve[0]
        cls = "baseload" if best["k"] >= 1 else ("bursty" if peak[u] >= burst_jobs else "small")
        row = {"user": w.users[u], "jobs": int(mine.n), "k_star": best["k"],
               "price": best["price"], "mean_wait_s": best["mean_wait_s"], "class": cls,
               "peak_jobs_5min": int(peak[u]), "curve": curve}
        if sh is not None:
            row["shared_price"] = round(float(sh_price[u]), 9)
            row["shared_mean_wait_s"] = round(float(sh_wait[u]), 4)
        users.append(row)
    n = len(users)
    classes = {k: sum(r["class"] == k for r in users) for k in ("baseload", "bursty", "small")}
    out = {"policy": c.policy, "ks": ks, "burst_jobs": burst_jobs, "users": n,
           "classes": classes,
           "class_shares": {k: round(v / n, 6) for k, v in classes.items()} if n else {},
           "per_user": users}
    if sh is not None:
        out["shared"] = {"policy": shared.policy, "reserved": shared.reserved,
                         "pricing": pricing,
                         "normalized_price": round(sh.normalized_price, 9)
                         if sh.normalized_price is not None else None}
        out["share_lower_wait_solo"] = round(
            sum(r["mean_wait_s"] < r["shared_mean_wait_s"] for r in users) / n, 6) if n else None
        out["share_lower_price_solo"] = round(
            sum(r["price"] is not None and r["price"] < r["shared_price"] for r in users) / n,
            6) if n else None
    return out


def periods(w: Workload, base: Cluster, policies: list[str], grid: list[int],
            k: int) -> list[dict]:
    """004 Fig. 7 (spec B.4, B-14): the trace cut into ``k`` equal spans of submit time
    (004 uses calendar years; an SWF log has none), π(N) and N* per span, and each span
    after the first priced at the previous span's N* ("provision by last year's optimum")."""
    if not (isinstance(k, int) and 1 <= k <= 100):
        raise ConfigError(f"--periods takes a whole number from 1 to 100, got {k!r}")
    edges = np.linspace(w.t0, w.period_end, k + 1)
    out = []
    prev = None
    for i in range(k):
        hi = edges[i + 1]
        mask = (w.submit >= edges[i]) & ((w.submit < hi) if i < k - 1 else (w.submit <= hi))
        sub = replace(w.subset(mask), t0=float(edges[i]), period_end=float(hi))
        s = sweep(sub, base, policies, grid)
        row = {"period": i, "start_s": float(edges[i]), "end_s": float(hi), "jobs": sub.n,
               "optimal": s["optimal"],
               "price": {p["policy"]: [q["normalized_price"] for q in p["points"]]
                         for p in s["policies"]}}
        if prev is not None:
            row["at_previous_optimum"] = {
                p: {"reserved": prev[p]["reserved"],
                    "normalized_price": row["price"][p][grid.index(prev[p]["reserved"])]}
                for p in policies if p in prev and p in s["optimal"]}
        prev = s["optimal"]
        out.append(row)
    return out
