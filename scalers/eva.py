"""Eva (Tzu-Tao Chang and Shivaram Venkataraman, "Eva: Cost-Efficient Cloud-Based Cluster
Scheduling", EuroSys '25, arXiv 2503.07437) without throughput awareness: this project
models no co-location interference, so this is Eva's own ablation
``EVAGangNoThroughputAwareScheduler``. The paper is not among ../shared/papers: the rules
follow the implementation spec ``../shared/specs/eva.md`` (cited as "spec, SECTION"),
restated in docs/reference/schedulers.md ("eva").

Every ``period`` seconds (the artifact's 300 s) a round draws two plans over the cluster
(scalers.eva_plans): a Full reconfiguration, which plans every movable task again, and a
Partial one, which keeps the instances that pay for themselves. It keeps the plan with the
larger ``provision saving x T - migration cost`` (spec, "Choosing between the two") and
turns it into decisions. A task's reservation price is what the cheapest type that fits it
alone costs now in the replay's market (spec, "Terms"; on spot, the spot price). A move
costs the task's memory footprint at the engine's migration rate
(``ClusterView.migration_seconds``) plus the mean spin-up when the destination is new, x
the task's standalone price: the same cloud model every scheduler here pays.

Between rounds Eva decides nothing (``quiet``): queued tasks wait for the next round, as
in the artifact."""

from __future__ import annotations

import math

from stratus.policy.compose import Plan, fill_reserved
from stratus.pricing.prices import RESERVED
from stratus.scalers.eva_plans import Draft, Snapshot, full_plan, partial_plan
from stratus.scalers.marginal import offer as make_offer
from stratus.sim.decisions import Decisions
from stratus.sim.model import RUNNING
from stratus.sim.view import ClusterView

#: seconds of a new instance's price a plan is charged per new instance (the artifact's
#: fixed figure; spec, "Choosing between the two")
NEW_INSTANCE_S = 300.0
EPS = 1e-6


class Eva:
    """The scheduler: one round every ``period`` seconds (<= 0: every tick), and at a tick
    where tasks are queued and no instance is live (nothing to reconfigure, and nothing
    would run before the round); ``partial`` / ``full``: whether Partial / Full
    reconfiguration may be chosen (the artifact's ``EVAGangNoLocal`` is ``partial=False``,
    ``EVAGangNoGlobal`` ``full=False``; both False: no reconfiguration, every instance stays
    and only queued tasks are placed)."""

    def __init__(self, name: str = "eva", period: float = 300.0, partial: bool = True,
                 full: bool = True) -> None:
        self.name = name
        self.period = period
        self.partial = partial
        self.full = full
        self.reset()

    # --- the hooks of stratus.policy.compose.Scheduler ------------------------------------------
    def reset(self) -> None:
        self._next = -math.inf  # the next round is due at the first tick at or after this
        self._start: float | None = None
        self._seen: set[int] = set()
        self._present: set[int] = set()
        self._placed: set[int] = set()
        self._alone: dict[int, float] = {}  # tid -> standalone $/h, fixed when it arrives
        self._events = 0
        self._full_events = 0
        self._any_full = False
        self.rounds = self.full_rounds = 0
        self.moves = self.deferred = 0

    def start(self, view: ClusterView) -> None:
        pass

    def stats(self) -> dict:
        return {"eva_rounds": self.rounds, "eva_full_rounds": self.full_rounds,
                "eva_moves": self.moves, "eva_moves_deferred": self.deferred}

    def parts(self) -> dict:
        """No parts: Eva is one policy (stratus.policy.compose.ComposedScheduler.parts)."""
        return {}

    def get_params(self) -> dict:
        return {}

    def quiet(self, view: ClusterView) -> tuple[float, bool]:
        """Nothing is decided before the next round (prices are read only then)."""
        return self._next - EPS, False

    def schedule(self, view: ClusterView) -> Decisions:
        now = view.now
        if now < self._next - EPS and not (view.pending and self._idle(view)):
            return Decisions()
        self._next = now + self.period
        if self._start is None:
            self._start = now
        return self._round(view)

    @staticmethod
    def _idle(view: ClusterView) -> bool:
        return next(iter(view.instances), None) is None

    # --- a round ---------------------------------------------------------------------------
    def _round(self, view: ClusterView) -> Decisions:
        self.rounds += 1
        plan = Plan(view)
        pending = view.pending
        events = self._count_events(view, pending)
        if pending and view.reserved_shared:  # prepaid capacity first (stratus.commitments.reserved)
            pending = fill_reserved(plan, view.reserved_instances, pending)
        snap = self._snapshot(view, pending)
        if self.partial and self.full:
            T = self._horizon(view.now)
            part = partial_plan(snap)
            sp, mp = self._weigh(view, snap, part)
            rival = sp * T - mp
            full = full_plan(snap, self._bound(view, snap, T, rival))
            chosen = (False, part)
            if full is not None:
                sf, mf = self._weigh(view, snap, full)
                if sf * T - mf > rival:
                    chosen = (True, full)
        elif self.full:
            chosen = (True, full_plan(snap))
        else:  # Partial only; neither: every instance stays
            chosen = (False, partial_plan(snap, keep_all=not self.partial))
        is_full, draft = chosen
        if is_full:
            self.full_rounds += 1
            self._any_full = True
            self._full_events += events
        self._apply(view, plan, snap, draft)
        return plan.decisions

    def _count_events(self, view: ClusterView, pending) -> int:
        """Arrivals, completions and revocations since the last round (the spec's events, "Choosing between the two")."""
        now_pending = {t.tid for t in pending}
        placed: set[int] = set()
        for inst in view.instances:
            placed.update(inst.tasks)
        present = now_pending | placed
        arrived = len(present - self._seen)
        done = len(self._present - present)
        revoked = len(self._placed & now_pending)
        self._seen |= present
        self._present, self._placed = present, placed
        n = arrived + done + revoked
        self._events += n
        return n

    def _horizon(self, now: float) -> float:
        """T, the expected time to the next Full reconfiguration (spec, "Choosing between the two"): the time since
        the start until the first one; then -1 / (lambda ln(1 - p)), lambda the rate of
        events, p the share of them that led to a Full one (no events yet: the time since
        the start)."""
        elapsed = now - self._start
        if not self._any_full or self._events == 0 or elapsed <= 0 or self._full_events == 0:
            return elapsed
        p = self._full_events / self._events
        if p >= 1.0:
            return 0.0
        lam = self._events / elapsed
        return -1.0 / (lam * math.log1p(-p))

    def _snapshot(self, view: ClusterView, pending) -> Snapshot:
        types = view.acquirable_types()
        price = {t.name: view.price(t) for t in types}
        snap = Snapshot(types, price, len(view.catalog.max_capacity))
        insts = [i for i in view.instances if i.market != RESERVED]
        for inst in insts:
            snap.add_instance(inst, view.price(inst.itype, inst.market))
        hold = snap.hold
        for inst in insts:
            iid = inst.iid
            for task in inst.tasks.values():
                loc = view.location(task)
                if loc is not inst:  # migrating in: planned here
                    hold(task, iid)
                elif view.is_migrating(task):
                    continue  # migrating out: planned where it goes
                elif view.state(task) == RUNNING and snap.priced(task):
                    snap.movable[iid].append(task.tid)
                    snap.loc[task.tid] = iid
                    snap.mobile.add(task.tid)
                    self._alone.setdefault(task.tid, snap.r[task.tid])
                else:  # waiting for the instance to boot (or fits nothing buyable now)
                    hold(task, iid)
        for task in pending:
            if snap.priced(task):
                snap.pending.append(task.tid)
                snap.mobile.add(task.tid)
                self._alone.setdefault(task.tid, snap.r[task.tid])
        return snap

    def _bound(self, view: ClusterView, snap: Snapshot, T: float, rival: float):
        """A watcher of the Full plan as it is drawn (``Draft.watch``): it gives up once the
        plan's total cannot beat ``rival`` (the Partial plan's). Every task is planned in
        the end, so the value is known; the price of the instances planned so far and the
        migration cost so far only grow: (value - price so far) x T - cost so far bounds
        the total from above. The choice is the same as drawing the whole plan."""
        r, loc, tasks, alone, mobile = snap.r, snap.loc, snap.tasks, self._alone, snap.mobile
        value = sum(r.values())
        lo, hi = view.spinup_s
        spin = (lo + hi) / 2
        acc = [0.0, 0.0]  # instance $/h so far, migration cost $ so far
        slack = 1e-9 * max(1.0, abs(rival))  # float sums in another order: never give up at a tie

        def watch(iid: int, itype, tids) -> bool:
            if iid >= 0:
                acc[0] += snap.inst_price[iid]
                for t in tids:
                    was = loc.get(t)
                    if t in mobile and was != iid and was is not None:
                        acc[1] += view.migration_seconds(tasks[t]) * alone[t] / 3600.0
            else:
                p = snap.price[itype.name]
                acc[0] += p
                acc[1] += NEW_INSTANCE_S * p / 3600.0
                for t in tids:
                    move = spin + (view.migration_seconds(tasks[t]) if t in loc else 0.0)
                    acc[1] += move * alone[t] / 3600.0
            return (value - acc[0]) / 3600.0 * T - acc[1] > rival - slack

        return watch

    def _weigh(self, view: ClusterView, snap: Snapshot, draft: Draft) -> tuple[float, float]:
        """(provision saving in $/s, migration cost in $) of a plan (spec, "Choosing between the two")."""
        r, loc, tasks, alone, mobile = snap.r, snap.loc, snap.tasks, self._alone, snap.mobile
        lo, hi = view.spinup_s
        spin = (lo + hi) / 2
        value = cost = mig = 0.0
        for iid, tids in draft.kept.items():
            cost += snap.inst_price[iid]
            for t in tids:
                value += r[t]
                was = loc.get(t)
                if t in mobile and was != iid:
                    move = view.migration_seconds(tasks[t]) if was is not None else 0.0
                    mig += move * alone[t] / 3600.0
        for itype, tids in draft.new:
            p = snap.price[itype.name]
            cost += p
            mig += NEW_INSTANCE_S * p / 3600.0
            for t in tids:
                value += r[t]
                move = spin + (view.migration_seconds(tasks[t]) if t in loc else 0.0)
                mig += move * alone[t] / 3600.0
        return (value - cost) / 3600.0, mig

    def _apply(self, view: ClusterView, plan: Plan, snap: Snapshot, draft: Draft) -> None:
        """The plan as decisions: new instances with their tasks (queued ones placed,
        running ones migrated when it is up), moves onto kept instances where there is room
        now (else next round), and the dropped instances released once empty (the engine
        releases an instance the moment its last task leaves)."""
        tasks, loc = snap.tasks, snap.loc
        offer = make_offer(view, plan, snap.types)
        # new instances in queue order, each by its first task (ties by task id)
        for itype, tids in sorted(draft.new, key=lambda g: min(g[1])):
            market = None
            if offer is not None:  # under a savings plan: the market at the margin
                market = offer.market_for(itype)
                offer.take(itype, market)
            queued = [tasks[t] for t in tids if t not in loc]
            moving = [tasks[t] for t in tids if t in loc]
            plan.acquire(itype, queued, market, moving)
            self.moves += len(moving)
        for iid in sorted(draft.kept):
            inst = snap.insts[iid]
            for t in sorted(draft.kept[iid]):
                if t not in snap.mobile or loc.get(t) == iid:
                    continue
                task = tasks[t]
                if not plan.fits(task, inst):
                    self.deferred += 1
                    continue
                if t in loc:
                    plan.migrate(task, inst)
                    self.moves += 1
                else:
                    plan.place(task, inst)
        for iid, inst in snap.insts.items():
            if iid not in draft.kept and not inst.tasks:
                plan.decisions.releases.append(inst)
