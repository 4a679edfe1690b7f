"""Savings plans inside the engine (issue 23, item 2): an hourly commitment that discounts
on-demand usage, as an AWS Compute Savings Plan does.

``--savings-plan USD_PER_HOUR[:DISCOUNT]`` (``ReplayConfig.savings_plan``, a
``SavingsPlan``) commits the replay to C $/hour. The sources:

* "What are Savings Plans?", AWS Savings Plans User Guide,
  https://docs.aws.amazon.com/savingsplans/latest/userguide/what-is-savings-plans.html: a
  commitment to a consistent amount of usage, in $/hour, for a one- or three-year term, in
  exchange for lower prices on that usage;
* "Understanding how Savings Plans apply to your AWS usage", same guide,
  https://docs.aws.amazon.com/savingsplans/latest/userguide/sp-applying.html: plans apply
  to eligible usage after EC2 Reserved Instances are applied, until the usage runs out or
  the commitment is exhausted; any remaining usage is charged at the On-Demand rates.

The model (docs/reference/savings-plans.md, docs/decisions.md "Savings plans"):

* **Hours.** The plan's clock hours start where the replay starts, the window's first
  scheduling tick (with or without a waiting policy; the origin of the reserved
  instances' horizon too, ``stratus.commitments.reserved``) and run to the replay's end: hour h is [origin + 3600 h, origin + 3600 (h + 1)). The last hour is
  usually partial; its commitment is prorated by seconds, C_h = C x seconds / 3600.
* **Eligible usage.** On-demand instances only: spot instances are not covered, and a
  reserved instance is billed at its own rate (reserved instances apply first). An
  instance's usage is what ``Cloud.release`` bills, per second from request to release at
  the on-demand rate, split at the hour boundaries. U_h is the on-demand-rate cost of the
  on-demand usage inside hour h.
* **The bill.** Each hour the commitment is paid whatever is used; usage is charged at the
  discounted rate (1 - d) x on-demand until those charges reach C_h, and at the full
  on-demand rate beyond:

      bill_h = C_h + max(0, U_h - C_h / (1 - d))

  covered_h = min(U_h, C_h / (1 - d)) (at on-demand rates); unused_h = C_h - (1 - d) x
  covered_h. One discount d for every type (a real plan's rate varies by type, region and
  term, and AWS applies it to the usage with the highest savings percentage first; with a
  single d the order does not change the bill).
* **The default discount** is 0.5 (DEFAULT_DISCOUNT): the Compute Savings Plans rate of the
  Linux instance in the sp-applying page's example (c5.9xlarge, $4.00 on-demand, $2.00 under
  the plan, 50% off). The page says its rates are illustrative only; AWS's marketing states
  "up to 66%" for Compute Savings Plans (seen quoted by third parties, not read at the
  source). Verified: the example's numbers on that page (read in the project's search
  corpus). Not verified: any price-list rate of an m4 or m5 type under a plan; give
  ``:DISCOUNT`` for a known rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stratus.base.errors import ConfigError
from stratus.pricing.prices import ON_DEMAND

DEFAULT_DISCOUNT = 0.5  # the user guide's illustrative Compute Savings Plans rate (see above)
HOUR_S = 3600.0
MAX_RATE = 1e9  # $/hour: a typo such as 1e308 fails, not the arithmetic (no overflow)
#: a fully covered on-demand type is scored at this fraction of its on-demand price rather
#: than at its marginal price of 0 (scalers.cost_efficiency): covered capacity ranks first,
#: and among covered types by used capacity per dollar of commitment it takes
COVERED_FLOOR = 1e-6


def _fmt(x: float) -> str:
    return format(x, ".15g")


@dataclass(frozen=True)
class SavingsPlan:
    """C = ``hourly_usd`` $/hour committed; on-demand usage up to it at (1 - ``discount``)
    x on-demand. Checked on construction (one ConfigError)."""

    hourly_usd: float
    discount: float = DEFAULT_DISCOUNT

    def __post_init__(self) -> None:
        _check_values(self.hourly_usd, self.discount, "SavingsPlan")
        object.__setattr__(self, "hourly_usd", float(self.hourly_usd))
        object.__setattr__(self, "discount", float(self.discount))

    def text(self) -> str:
        """The canonical ``USD_PER_HOUR:DISCOUNT`` form."""
        return f"{_fmt(self.hourly_usd)}:{_fmt(self.discount)}"

    def headroom(self, od_rate: float) -> float:
        """$/h of commitment left when on-demand instances of ``od_rate`` $/h (at on-demand
        prices) run: C - (1 - d) x od_rate (negative when they exceed it)."""
        return self.hourly_usd - (1.0 - self.discount) * od_rate

    def marginal(self, price: float, od_rate: float) -> float:
        """$/h one more on-demand instance of on-demand ``price`` adds to the bill when
        on-demand instances of ``od_rate`` $/h run (``marginal_price`` at ``headroom``)."""
        return marginal_price(price, self.headroom(od_rate), self.discount)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_values(rate, discount, what: str) -> None:
    if not (_is_number(rate) and math.isfinite(rate) and 0 < rate <= MAX_RATE):
        raise ConfigError(f"{what}: the commitment must be a number of $/hour > 0 and <= "
                          f"{MAX_RATE:g}, got {rate!r}")
    if not (_is_number(discount) and math.isfinite(discount) and 0.0 <= discount < 1.0):
        raise ConfigError(f"{what}: the discount must be a fraction in [0, 1), "
                          f"got {discount!r}")


def parse_savings_plan(text, what: str = "--savings-plan") -> SavingsPlan | None:
    """``USD_PER_HOUR[:DISCOUNT]`` (or a number: the rate) to a SavingsPlan; None or "":
    none. Every mistake is one ConfigError naming ``what``."""
    if text is None:
        return None
    if isinstance(text, SavingsPlan):
        return text
    if _is_number(text):
        text = repr(text)
    if not isinstance(text, str):
        raise ConfigError(f"{what} takes USD_PER_HOUR[:DISCOUNT] (e.g. 5 or 5:0.3), "
                          f"got {text!r}")
    s = text.strip()
    if not s:
        return None
    rate_s, sep, disc_s = s.partition(":")
    try:
        rate = float(rate_s)
        discount = float(disc_s) if sep else DEFAULT_DISCOUNT
    except ValueError:
        raise ConfigError(f"{what} takes USD_PER_HOUR[:DISCOUNT] (e.g. 5 or 5:0.3), "
                          f"got {text!r}") from None
    _check_values(rate, discount, what)
    return SavingsPlan(rate, discount)


def check_plan(plan, what: str = "ReplayConfig.savings_plan") -> None:
    """None, or a SavingsPlan (parse_savings_plan reads the text form)."""
    if plan is not None and not isinstance(plan, SavingsPlan):
        raise ConfigError(f"{what} takes a SavingsPlan (stratus.commitments.savings.parse_savings_plan "
                          f"reads USD_PER_HOUR[:DISCOUNT]), got {plan!r}")


def marginal_price(price: float, headroom: float, discount: float) -> float:
    """$/h one more on-demand instance of on-demand ``price`` adds under a plan with
    ``headroom`` $/h of commitment left: 0 while the headroom covers its discounted rate
    (1 - d) x price, the full price with no headroom, and in between the uncovered part,
    (1 - headroom / ((1 - d) x price)) x price. A headroom short of the need by float noise
    (relative 1e-12: a plan sized to whole instances) covers it."""
    need = (1.0 - discount) * price
    if headroom >= need * (1.0 - 1e-12):
        return 0.0
    if headroom <= 0.0:
        return price
    return (1.0 - headroom / need) * price


def bound(x: float | None, commitment: float, discount: float) -> float | None:
    """A lower bound on the bill under the plan from ``x``, a lower bound on the same
    instances' bill without it: C + max(0, x - C / (1 - d)), C the whole commitment.
    Valid since the bill is C + the spot and reserved bills + sum_h max(0, U_h - C_h /
    (1 - d)) >= C + max(0, (spot + reserved + sum_h U_h) - C / (1 - d))."""
    if x is None:
        return None
    return commitment + max(0.0, x - commitment / (1.0 - discount))


@dataclass(frozen=True)
class PlanBill:
    """A replay's savings-plan bill, in $: ``usage`` (on-demand usage at on-demand rates)
    = ``covered`` + ``uncovered``; ``commitment`` = sum of C_h, of which ``unused`` bought
    nothing; the on-demand part of the bill is ``commitment + uncovered``."""

    commitment: float
    usage: float
    covered: float
    uncovered: float
    unused: float

    @property
    def total(self) -> float:
        return self.commitment + self.uncovered


def hours(origin: float, end: float) -> int:
    """Clock hours of the plan from ``origin`` to ``end`` (the last one partial)."""
    return max(0, math.ceil((end - origin) / HOUR_S - 1e-12)) if end > origin else 0


def hourly_usage(starts: np.ndarray, ends: np.ndarray, rates: np.ndarray, origin: float,
                 n_hours: int) -> np.ndarray:
    """$ of usage per plan hour: intervals [starts, ends] at constant ``rates`` $/h, split
    at the hour boundaries origin + 3600 h (intervals lie within the ``n_hours``)."""
    out = np.zeros(n_hours)
    if not n_hours or not starts.size:
        return out
    a = np.maximum(starts, origin)
    b = np.maximum(ends, a)
    last = n_hours - 1
    ha = np.clip(np.floor((a - origin) / HOUR_S), 0, last).astype(np.int64)
    hb = np.clip(np.floor((b - origin) / HOUR_S), 0, last).astype(np.int64)
    same = ha == hb
    # within one hour: the whole interval
    out += np.bincount(ha[same], rates[same] * (b[same] - a[same]), minlength=n_hours)
    k = ~same
    if k.any():
        ak, bk, pk, hak, hbk = a[k], b[k], rates[k], ha[k], hb[k]
        # the first piece, to the end of its hour; the last piece, from the start of its own
        out += np.bincount(hak, pk * np.maximum(0.0, origin + (hak + 1) * HOUR_S - ak),
                           minlength=n_hours)
        out += np.bincount(hbk, pk * np.maximum(0.0, bk - (origin + hbk * HOUR_S)),
                           minlength=n_hours)
        # whole hours in between: a rate step up after the first hour, down at the last
        steps = np.bincount(hak + 1, pk, minlength=n_hours + 1)
        steps -= np.bincount(hbk, pk, minlength=n_hours + 1)
        out += np.cumsum(steps)[:n_hours] * HOUR_S
    return out / HOUR_S


def hourly_usage_series(starts, ends, series, origin: float, n_hours: int) -> np.ndarray:
    """``hourly_usage`` for price series that may change (one PriceSeries per interval),
    integrated piece by piece."""
    out = np.zeros(n_hours)
    for a, b, s in zip(starts, ends, series):
        a = max(float(a), origin)
        h = min(int((a - origin) // HOUR_S), n_hours - 1)
        while a < b:
            edge = b if h >= n_hours - 1 else min(b, origin + (h + 1) * HOUR_S)
            out[h] += s.cost(a, edge)
            a, h = edge, h + 1
    return out


def plan_bill(plan: SavingsPlan, usage: np.ndarray, origin: float, end: float) -> PlanBill:
    """The bill of ``usage`` (per plan hour, at on-demand rates) under ``plan``."""
    n = len(usage)
    secs = np.minimum(HOUR_S, end - (origin + np.arange(n) * HOUR_S))
    c = plan.hourly_usd * np.maximum(secs, 0.0) / HOUR_S
    covered = np.minimum(usage, c / (1.0 - plan.discount))
    unused = c - (1.0 - plan.discount) * covered
    return PlanBill(commitment=float(c.sum()), usage=float(usage.sum()),
                    covered=float(covered.sum()), uncovered=float((usage - covered).sum()),
                    unused=float(unused.sum()))


def ledger_bill(plan: SavingsPlan, ledger, prices, origin: float, end: float) -> PlanBill:
    """The plan's bill of the on-demand instances in ``ledger`` (stratus.sim.ledger: request
    to release, per second) at ``prices``' on-demand rates, over the plan's hours."""
    n = hours(origin, end)
    if ON_DEMAND in ledger.markets and n:
        mcode = ledger.markets.index(ON_DEMAND)
        mask = np.asarray(ledger.market_code, dtype=np.int64) == mcode
        starts = np.asarray(ledger.requested, dtype=np.float64)[mask]
        ends = np.asarray(ledger.released, dtype=np.float64)[mask]
        codes = np.asarray(ledger.type_code, dtype=np.int64)[mask]
        series = [prices.series(t.name, ON_DEMAND) for t in ledger.types]
        if all(s.is_constant for s in series):
            rates = np.array([float(s.prices[0]) for s in series])[codes]
            usage = hourly_usage(starts, ends, rates, origin, n)
        else:
            usage = hourly_usage_series(starts, ends, [series[c] for c in codes], origin, n)
    else:
        usage = np.zeros(n)
    return plan_bill(plan, usage, origin, end)


__all__ = ["COVERED_FLOOR", "DEFAULT_DISCOUNT", "PlanBill", "SavingsPlan", "bound",
           "check_plan", "hourly_usage", "ledger_bill", "marginal_price",
           "parse_savings_plan", "plan_bill"]
