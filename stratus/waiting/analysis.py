"""The queueing analysis of waiting policies over s fixed (reserved) servers with an
on-demand overflow (Ambati et al., *Modeling and Analyzing Waiting Policies for
Cloud-Enabled Schedulers*, paper 000 §3-4): M/M/s with Poisson arrivals λ and exponential
service of mean 1/μ, one job per server.

Prices are per unit of work: the effective price P is what the workload pays (the s
servers at ``pf`` whether busy or not, plus on-demand work at ``po``) per unit of offered
work a = λ/μ. Every formula below is that ratio; where it is written out in the paper (Eqs.
4, 14, 15, 24) it reduces to the same thing (docs/decisions.md).

Erlang's formulas come from the recurrence B(k) = a·B(k-1) / (k + a·B(k-1)), stable for
any s (no factorials or powers); every s up to a bound is computed in one pass.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from stratus.base.errors import ConfigError

POLICIES = ("ajw", "njw", "ajw-t", "sww", "ljw", "compound")
MAX_SERVERS = 10_000_000  # Erlang's recurrence is O(s): beyond this, say so rather than grind


def erlang_b_all(s_max: int, a: float) -> np.ndarray:
    """B(k, a) for k = 0..s_max (Erlang's loss formula, 000 §3.2)."""
    out = np.empty(s_max + 1)
    b = 1.0
    out[0] = b
    for k in range(1, s_max + 1):
        b = a * b / (k + a * b)
        out[k] = b
    return out


def erlang_b(s: int, a: float) -> float:
    return float(erlang_b_all(s, a)[s])


def erlang_c(s: int, a: float) -> float:
    """Erlang's delay formula C(s, a): the chance an arrival waits (000 §3.1); 1 at a ≥ s."""
    if a >= s:
        return 1.0
    b = erlang_b(s, a)
    return s * b / (s - a * (1.0 - b))


@dataclass(frozen=True)
class Reneging:
    """M/M/s with deterministic patience b (000 Lemma 3.1, after Liu and Kulkarni): the
    share r of arrivals that leave after waiting b, and the mean wait of those that
    are served, counted over all arrivals (the first term of Eq. 12)."""

    r: float
    served_wait: float


def reneging(s: int, lam: float, mu: float, b: float, p: float | None = None) -> Reneging:
    """Lemma 3.1 (Eqs. 6-10, 12). ``p`` is B(s, λ/μ) when the caller has it.

    The paper prints ``e^{δb}`` in α (Eq. 10); the derivation (virtual waiting time density
    λ·p_{s-1}·e^{-δv} up to b) gives ``e^{-δb}``, which is also the only reading with r → 0
    as b → ∞ below capacity. Both branches are written so that no exponential overflows:
    ``e^{-δb}`` is used when δ ≥ 0 and ``e^{δb}`` when δ < 0 (over capacity)."""
    if s <= 0:
        return Reneging(1.0, 0.0)
    a = lam / mu
    if p is None:
        p = erlang_b(s, a)
    smu = s * mu
    delta = smu - lam
    beta = smu * p / (1.0 - p)
    if b <= 0:  # nobody waits: Erlang's loss system
        return Reneging(p, 0.0)
    db = delta * b
    if delta >= 0:
        e = math.exp(-db)
        phi = b if delta == 0 else -math.expm1(-db) / delta  # ∫_0^b e^{-δv} dv
        alpha_beta = beta / (1.0 + beta * (phi + e / smu))
        r = alpha_beta * e / smu
        # ∫_0^b v e^{-δv} dv
        if delta == 0 or db < 1e-6:
            moment = b * b / 2.0 - delta * b ** 3 / 3.0
        else:
            moment = (1.0 - e * (1.0 + db)) / (delta * delta)
        served = alpha_beta * moment
    else:
        d = -delta
        inv = math.exp(-d * b)  # e^{δb}: small
        # r = β / (sμ·(e^{δb} + β·(1 - e^{δb})/|δ| + β/(sμ)))
        r = beta / (smu * (inv + beta * (-math.expm1(-d * b)) / d + beta / smu))
        # αβ·∫_0^b v e^{|δ|v} dv = r·sμ·∫_0^b v e^{-|δ|(b-v)} dv
        if d * b < 1e-6:
            k = b * b / 2.0
        else:
            k = b * (-math.expm1(-d * b)) / d - (1.0 - inv * (1.0 + d * b)) / (d * d)
        served = r * smu * k
    return Reneging(min(max(r, 0.0), 1.0), max(served, 0.0))


@dataclass(frozen=True)
class Outcome:
    """What one policy gives at s servers: mean wait over all jobs (seconds when λ, μ are
    per second), effective price P per unit of work in the units of ``po``, P ÷ po, and the
    share of jobs that ran on demand."""

    policy: str
    servers: int
    wait_s: float
    price: float
    normalized_price: float
    on_demand_fraction: float
    opportunity_cost: float  # P × w (000 §4.1.1)

    def as_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in asdict(self).items()}


def _outcome(policy, s, wait, fixed_rate, od_work_rate, work_rate, po, od_jobs) -> Outcome:
    price = (fixed_rate + po * od_work_rate) / work_rate
    return Outcome(policy, s, wait, price, price / po, od_jobs,
                   price * wait if math.isfinite(wait) else math.inf)


def evaluate(policy: str, s: int, lam: float, mu: float, pf: float, po: float,
             b: float = 0.0, t: float = 0.0, f_over: float = 0.0,
             f_under: float = 0.0) -> Outcome:
    """One policy at s servers (000 §3-4). ``b``: waiting threshold (AJW-T, SWW,
    compound); ``t``: short-job runtime threshold (LJW, compound); ``f_over``/``f_under``:
    SWW's wait mispredictions (§4.1.1)."""
    _check(policy, s, lam, mu, pf, po, b, t, f_over, f_under)
    a = lam / mu
    fixed = s * pf
    if policy == "ajw":  # Eqs. 1-2
        wait = erlang_c(s, a) / (s * mu - lam) if a < s else math.inf
        return _outcome(policy, s, wait, fixed, 0.0, a, po, 0.0)
    if policy == "njw":  # Eqs. 3-4: r = B(s, a)
        r = erlang_b(s, a)
        return _outcome(policy, s, 0.0, fixed, r * a, a, po, r)
    if policy in ("ajw-t", "sww"):  # Lemma 3.1, Eqs. 12-14
        lam_in = (1.0 - f_over) * lam  # over-predicted jobs go on demand at once (§4.1.1)
        ren = reneging(s, lam_in, mu, b)
        reneged = (1.0 - f_over) * ren.r
        od = f_over + reneged
        if policy == "ajw-t":
            wait = (1.0 - f_over) * (ren.served_wait + ren.r * b)
        else:  # under-predicted balkers wait b, then leave (§4.1.1)
            wait = (1.0 - f_over) * (ren.served_wait + f_under * ren.r * b)
        return _outcome(policy, s, wait, fixed, od * a, a, po, od)
    # LJW and compound: short jobs (runtime < t) run on demand at once (Eqs. 15-23)
    r_short = -math.expm1(-mu * t)
    lam_long = lam * (1.0 - r_short)
    mean_long = t + 1.0 / mu  # Eq. 20
    mu_long = 1.0 / mean_long
    short_work = lam / mu - lam_long * mean_long  # Eq. 21: λ·r/μ_short
    cv2_term = ((mu_long / mu) ** 2 + 1.0) / 2.0  # (CV² + 1)/2, CV = μ_long/μ (Eq. 23)
    if policy == "ljw":
        a_long = lam_long / mu_long
        if a_long < s:
            w_long = cv2_term * erlang_c(s, a_long) / (s * mu_long - lam_long)
        else:
            w_long = math.inf
        return _outcome(policy, s, (1.0 - r_short) * w_long, fixed, short_work, a, po,
                        r_short)
    # compound (Eqs. 24-26): SWW on the long jobs, with λ_long and μ_long
    ren = reneging(s, lam_long, mu_long, b)
    wait = (1.0 - r_short) * cv2_term * ren.served_wait  # mean over all jobs (decisions.md)
    od_work = short_work + lam_long * ren.r * mean_long
    return _outcome(policy, s, wait, fixed, od_work, a, po,
                    r_short + (1.0 - r_short) * ren.r)


def marginal_utilizations(policy: str, s_max: int, lam: float, mu: float, b: float = 0.0,
                          t: float = 0.0, f_over: float = 0.0) -> np.ndarray:
    """ρ_s for s = 1..s_max: the work the s-th server takes off the on-demand fleet
    (Eq. 3 for NJW, Eq. 11 for AJW-T and SWW, the long jobs' Eq. 11 for compound)."""
    if policy == "njw":
        a = lam / mu
        bb = erlang_b_all(s_max, a)
        return a * (bb[:-1] - bb[1:])
    if policy in ("ajw-t", "sww"):
        lam_in, mu_in, scale = (1.0 - f_over) * lam, mu, (1.0 - f_over) * lam / mu
    elif policy == "compound":
        r_short = -math.expm1(-mu * t)
        mu_in = 1.0 / (t + 1.0 / mu)
        lam_in = lam * (1.0 - r_short)
        scale = lam_in / mu_in
    else:
        raise ConfigError(f"{policy}: every job waits for a fixed server, so the price keeps "
                          f"falling as s nears the load while the wait grows without bound; "
                          f"there is no cost optimum (give --servers)")
    bb = erlang_b_all(s_max, lam_in / mu_in)
    r = np.array([reneging(k, lam_in, mu_in, b, p=float(bb[k])).r if k else 1.0
                  for k in range(s_max + 1)])
    return scale * (r[:-1] - r[1:])


def optimal_servers(policy: str, lam: float, mu: float, pf: float, po: float,
                    b: float = 0.0, t: float = 0.0, f_over: float = 0.0) -> int:
    """The s where the last server's utilization ρ_s falls to the discount d = pf/po: one
    more server costs pf and saves ρ_s·po (000 §2, §3.2)."""
    if not (0 < pf < po):
        raise ConfigError(f"--pf must be above 0 and below --po for an optimum, got pf={pf}, "
                          f"po={po}")
    _check(policy, 0, lam, mu, pf, po, b, t, f_over, 0.0)
    d = pf / po
    a = lam / mu
    s_max = int(a + 12.0 * math.sqrt(a) + 50)
    while True:
        rho = marginal_utilizations(policy, s_max, lam, mu, b, t, f_over)
        worth = np.nonzero(rho >= d)[0]
        if worth.size == 0:
            return 0
        if worth[-1] < s_max - 1:
            return int(worth[-1]) + 1  # rho[k] is the (k+1)-th server
        s_max *= 2


def _check(policy, s, lam, mu, pf, po, b, t, f_over, f_under) -> None:
    if policy not in POLICIES:
        raise ConfigError(f"unknown waiting policy {policy!r}; known: {', '.join(POLICIES)}")
    for name, v in (("--lam", lam), ("--mu", mu), ("--po", po)):
        if not (v > 0 and math.isfinite(v)):
            raise ConfigError(f"{name} must be a positive number, got {v}")
    for name, v in (("--pf", pf), ("--b", b), ("--t", t)):
        if not (v >= 0 and math.isfinite(v)):
            raise ConfigError(f"{name} must be a number ≥ 0, got {v}")
    if not (isinstance(s, int) and 0 <= s <= MAX_SERVERS):
        raise ConfigError(f"--servers must be a whole number from 0 to {MAX_SERVERS:,}, got {s}")
    if lam / mu > MAX_SERVERS:
        raise ConfigError(f"the offered load --lam/--mu = {lam / mu:.3g} servers is beyond what "
                          f"the model evaluates ({MAX_SERVERS:,})")
    if not (0 <= f_over <= 1 and 0 <= f_under <= 1 and f_over + f_under <= 1):
        raise ConfigError(f"--f-over and --f-under are fractions with a sum ≤ 1, got "
                          f"{f_over} and {f_under}")
