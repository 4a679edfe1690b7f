"""The simulated cloud: instances from request to release, markets and prices, per-second
billing, spot revocations, and the cloud's own faults (crashes, insufficient capacity).
It schedules its events on the kernel; what happens to the tasks on an instance is the
engine's business."""

from __future__ import annotations

import math
from itertools import count

import numpy as np

from stratus.pricing.catalog import Catalog, InstanceType
from stratus.pricing.prices import ON_DEMAND, RESERVED, SPOT, PriceBook
from stratus.sim.events import EV_CRASH, EV_PRICE, EV_READY, EV_REVOKE
from stratus.sim.faults import Faults
from stratus.sim.kernel import Kernel
from stratus.sim.ledger import Ledger
from stratus.sim.model import READY, RELEASED, Instance

SPOT_WARNING_S = 120.0  # AWS two-minute interruption notice


class Cloud:
    """Live instances (``alive``, oldest first), current prices, released instances as
    ledger rows, and the faults' state. Random streams: spin-up delays from ``seed``; the
    faults their own, so that a replay without faults draws exactly what it drew before
    they existed."""

    def __init__(self, kernel: Kernel, catalog: Catalog, prices: PriceBook,
                 markets: tuple[str, ...], spinup_s: tuple[float, float], seed: int,
                 faults: Faults | None, record: bool) -> None:
        self.kernel = kernel
        self.catalog = catalog
        self.prices = prices
        self.markets = markets
        self.spinup_s = spinup_s
        self.alive: dict[int, Instance] = {}
        # sets of instance ids that changed, one per watcher (ClusterView.watch_instances)
        self.watchers: list[set[int]] = []
        self._spot_live: dict[str, dict[int, Instance]] = {}  # type -> live spot instances
        # reserved instances (stratus.commitments.reserved): live from the first tick to the end
        self.reserved: dict[int, Instance] = {}
        # with a savings plan (stratus.commitments.savings): type -> live on-demand instances, as the
        # view shows them; None without
        self.od_live: dict[str, int] | None = None
        self.ledger = Ledger(len(catalog.types[0].capacity))  # released instances, as rows
        self.released: list[Instance] | None = [] if record else None  # the objects too
        self.current_price: dict[tuple[str, str], float] = {}
        self.price_events = 0  # price changes on the heap: none left, prices are final
        self.revocations = 0
        self._iid = count()
        self._rng = np.random.default_rng([seed, 0xC10D])
        self._spin: list[float] = []
        self.faults = faults
        self._frng = np.random.default_rng([seed, 0xFA175]) if faults is not None else None
        self.crash_mean_s = (3600.0 / faults.crash_per_hour
                             if faults is not None and faults.crash_per_hour > 0 else 0.0)
        self.crashes = 0
        self.ice_failures = 0  # requests refused for insufficient capacity
        self.ice_shortages = 0  # of which fresh: those that started a shortage
        self.failed_requests: list[tuple[float, str, str]] = []  # (at, type, market)
        # type -> when its shortage ends: requests for it fail until then, and the policies
        # know it (the refusal is the answer to a request, stratus.sim.faults)
        self.known_unavailable: dict[str, float] = {}
        # (type, market) -> (time, refused) of its last launch call: a tick's requests for a
        # type in a market are one call, answered once (stratus.sim.faults)
        self._calls: dict[tuple[str, str], tuple[float, bool]] = {}

    # --- prices ----------------------------------------------------------------------------
    def default_bid(self, itype: InstanceType) -> float:
        """The spot bid when a policy names none: the on-demand price (Stratus §3.3)."""
        return self.current_price.get((itype.name, ON_DEMAND), itype.ondemand_hourly)

    def open_prices(self, t: float) -> None:
        """Prices at ``t`` for every type and market the book has, and their next changes."""
        for itype in self.catalog:
            for market in self.prices.markets():
                if self.prices.has(itype.name, market):
                    self._price_at((itype.name, market), t)

    def _price_at(self, key: tuple[str, str], t: float) -> float:
        price = self.current_price[key] = self.prices.price(key[0], key[1], t)
        nxt = self.prices.next_change(key[0], key[1], t)
        if nxt < math.inf:
            self.kernel.schedule(nxt, EV_PRICE, key)
            self.price_events += 1
        return price

    def on_price(self, key: tuple[str, str], t: float) -> None:
        """A price changes: spot instances bid below it get the two-minute warning."""
        self.price_events -= 1
        price = self._price_at(key, t)
        if key[1] == SPOT:
            for inst in self._spot_live.get(key[0], {}).values():
                if inst.revoke_at is None and price > inst.bid:
                    self._warn(inst, t)

    def _warn(self, inst: Instance, t: float) -> None:
        inst.revoke_at = t + SPOT_WARNING_S
        self.kernel.schedule(inst.revoke_at, EV_REVOKE, inst)

    # --- instances ---------------------------------------------------------------------------
    def _spinup(self) -> float:
        lo, hi = self.spinup_s
        if lo == hi:
            return lo
        if not self._spin:
            self._spin = self._rng.uniform(lo, hi, size=4096).tolist()[::-1]
        return self._spin.pop()

    def request(self, itype: InstanceType, market: str, bid: float | None, keep: bool,
                t: float) -> Instance | None:
        """A new instance, requested at ``t``, ready after a spin-up delay; or None when the
        provider refuses it for insufficient capacity (stratus.sim.faults): the refusal is the
        request's answer, as EC2's, so nothing is created, billed or drawn from the spin-up
        stream. A spot bid below the current price is revoked two minutes on."""
        if self.faults is not None and self._ice_fails(itype.name, market, t):
            return None
        if market == SPOT and bid is None:
            bid = self.default_bid(itype)
        inst = Instance(next(self._iid), itype, market, bid, t)
        inst.keep = inst.was_kept = keep
        self.alive[inst.iid] = inst
        self.changed(inst)
        if self.od_live is not None and market == ON_DEMAND:
            self.od_live[itype.name] = self.od_live.get(itype.name, 0) + 1
        self.kernel.schedule(t + self._spinup(), EV_READY, inst)
        if market == SPOT:
            self._spot_live.setdefault(itype.name, {})[inst.iid] = inst
            if self.current_price[(itype.name, SPOT)] > bid:
                self._warn(inst, t)
        return inst

    def add_reserved(self, itype: InstanceType, t: float) -> Instance:
        """A reserved instance, up at ``t`` with no spin-up (prepaid capacity is running
        before the window opens) and no random draw; kept (never released when idle), never
        revoked, and it does not crash (docs/decisions.md, "Reserved instances")."""
        inst = Instance(next(self._iid), itype, RESERVED, None, t)
        inst.keep = inst.was_kept = True
        inst.state = READY
        inst.ready_at = t
        inst.used_since = t
        self.alive[inst.iid] = inst
        self.reserved[inst.iid] = inst
        self.changed(inst)
        return inst

    def watch(self) -> set[int]:
        """A new set of the ids of instances that change from now on (acquired, up,
        released, or a task held, freed, started or stopped there: ``changed``)."""
        w: set[int] = set()
        self.watchers.append(w)
        return w

    def changed(self, inst: Instance | None) -> None:
        """Tell the watchers that ``inst`` changed (the engine, for its tasks)."""
        if inst is not None:
            for w in self.watchers:
                w.add(inst.iid)

    def track_on_demand(self) -> None:
        """Count live on-demand instances per type from now on (``od_live``; a savings
        plan's add-on asks, stratus.commitments)."""
        if self.od_live is None:
            self.od_live = {}

    def od_rate(self) -> float:
        """$/h of the live on-demand instances at today's on-demand prices (with a savings
        plan; 0 without)."""
        cp = self.current_price
        return sum(n * cp[(name, ON_DEMAND)] for name, n in (self.od_live or {}).items() if n)

    @property
    def n_reserved(self) -> int:
        return len(self.reserved)

    def busy(self) -> bool:
        """An instance other than an idle reserved one is live."""
        if len(self.alive) > self.n_reserved:
            return True
        return self.n_reserved > 0 and any(i.tasks for i in self.reserved.values())

    def ready(self, inst: Instance, t: float) -> None:
        """The instance is up: running, and from now on subject to crashes."""
        inst.state = READY
        inst.ready_at = t
        inst.used_since = t
        self.changed(inst)
        if self.crash_mean_s:  # Poisson crashes from the moment it is up (memoryless)
            self.kernel.schedule(t + self._frng.exponential(self.crash_mean_s), EV_CRASH,
                                 inst.iid)

    def release(self, inst: Instance, t: float) -> None:
        """End the instance at ``t`` and bill it from request to release at its market's
        prevailing prices, per second (Stratus §4.1)."""
        inst.state = RELEASED
        inst.released_at = t
        del self.alive[inst.iid]
        self.changed(inst)
        if self.od_live is not None and inst.market == ON_DEMAND:
            self.od_live[inst.itype.name] -= 1
        inst.cost = self.prices.cost(inst.itype.name, inst.market, inst.requested_at, t)
        if inst.market == SPOT:
            del self._spot_live[inst.itype.name][inst.iid]
        elif inst.market == RESERVED:
            del self.reserved[inst.iid]
        self.ledger.add(inst)
        if self.released is not None:  # the audit checks every instance object
            self.released.append(inst)

    # --- faults (stratus.sim.faults) ---------------------------------------------------------
    def _ice_fails(self, name: str, market: str, t: float) -> bool:
        """Whether the provider refuses a request for type ``name`` in ``market`` made at
        ``t`` for insufficient capacity. The requests of one instant for one type and market
        are one launch call with one answer: inside a shortage of the type, a refusal
        without a draw; outside, one draw, a refusal with probability ice, which starts a
        shortage of ice-window seconds (every market)."""
        key = (name, market)
        call = self._calls.get(key)
        if call is not None and call[0] == t:  # the same call: its answer
            refused = call[1]
        elif self.known_unavailable.get(name, -math.inf) > t:
            refused = True
        else:
            f = self.faults
            refused = f.ice_prob > 0 and self._frng.random() < f.ice_prob
            if refused:
                self.shortage(name, t, f.ice_window_s)
        self._calls[key] = (t, refused)
        if refused:
            self.refused(name, market, t)
        return refused

    def shortage(self, name: str, t: float, window_s: float) -> None:
        """A shortage of type ``name`` starts at ``t``: requests for it are refused for
        ``window_s`` seconds (0: only the one that found it), and the policies know it."""
        self.ice_shortages += 1
        if window_s:
            self.known_unavailable[name] = t + window_s

    def refused(self, name: str, market: str, t: float) -> None:
        """Book a request for ``name`` in ``market`` refused at ``t`` for insufficient
        capacity."""
        self.ice_failures += 1
        self.failed_requests.append((t, name, market))

    def shortage_forever(self) -> bool:
        """Every request fails (ice:1), one has, and nothing is live (a refused request
        never is): capacity can never be had."""
        return (self.faults is not None and self.faults.ice_prob >= 1 and self.ice_failures > 0
                and not self.alive)


__all__ = ["SPOT_WARNING_S", "Cloud"]
