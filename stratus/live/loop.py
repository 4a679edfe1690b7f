"""The live loop: observe the cluster and the cloud, bring the mirror (the engine's state,
stratus.live.mirror) up to what happened, and at each tick let the policy decide on the
engine's view and apply its decisions through the engine's checks, then to the world.

Between ticks the loop wakes (every few seconds on a wall clock; at each change of a test's
simulated world) and reacts as the engine does at the moment an event happens: an instance
that came up starts its waiting tasks and queued migrations, a finished task frees its room
and an emptied instance is terminated at once, a lost node sends its tasks back to the
queue. Every change to the world is an idempotent action: one that fails after its
retries stays in an outbox and is tried again at the next wake-up, so the world converges
on the mirror. A tick whose observation fails is skipped (``skipped_ticks``).

``shadow``: nothing is changed in the world. At each tick the mirror is built afresh from
what is observed (every node an instance, every pod of the namespace a task), the policy
decides on it from a clean start, and its decisions are checked and applied to that copy
only; the log says what it would do and what it would save (``ShadowEstimate``).
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from stratus.base.errors import ConfigError
from stratus.base.resources import shown, to_units
from stratus.live.clock import Clock, seconds
from stratus.live.ec2 import GONE_STATES, LIVE_STATES, CloudInstance, Ec2Capacity
from stratus.live.kube import (
    ANTI_AFFINITY,
    CHECKPOINT,
    ESTIMATE,
    ESTIMATE_KEY,
    INDEX_LABEL,
    JOB_LABEL,
    JOB_SIZE,
    KubeWork,
    Node,
    Pod,
    recreated,
)
from stratus.live.mirror import Mirror, Refused, Unavailable
from stratus.pricing.prices import ON_DEMAND, SPOT
from stratus.sim.cloud import SPOT_WARNING_S
from stratus.sim.contracts import Resets
from stratus.sim.decisions import Decisions
from stratus.sim.engine import ReplayConfig
from stratus.sim.model import DONE, MIGRATING, PENDING, REQUESTED, Instance

# event kinds, in the engine's order at equal times (stratus.sim.events)
_FINISH, _MIGRATED, _REVOKE, _CRASH, _READY = 1, 2, 3, 4, 5
# node labels that say what a node is (shadow mode): instance type, and capacity type
TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
_MADE = re.compile(r"^(.*)-[mr]([0-9]+)$")  # a re-created pod's name (LiveLoop._replace)
MARKET_LABELS = {"karpenter.sh/capacity-type": {"spot": SPOT, "on-demand": ON_DEMAND},
                 "eks.amazonaws.com/capacityType": {"SPOT": SPOT, "ON_DEMAND": ON_DEMAND}}


def canonical(t: float, dec: Decisions) -> dict:
    """One tick's decisions as plain data, by task and instance ids: what the two worlds'
    logs compare."""
    return {"t": t,
            "acquire": [[a.itype.name, a.market, [x.tid for x in a.tasks],
                         [x.tid for x in a.migrate], a.keep] for a in dec.acquisitions],
            "place": [[p.task.tid, p.instance.iid] for p in dec.placements],
            "migrate": [[m.task.tid, m.dest.iid] for m in dec.migrations],
            "release": [i.iid for i in dec.releases],
            "keep": sorted([iid, bool(k)] for iid, k in dec.keep.items())}


@dataclass
class _Action:
    what: str
    run: Callable[[], None]
    owes: int | None = None  # the task whose pod it makes or binds


@dataclass
class ShadowEstimate:
    """Shadow mode's account: per tick, the $/h of the cluster as it is and as it would be
    after the policy's decisions (instances it would release, or empty by migrations, no
    longer billed; those it would acquire billed); their difference over the tick is the
    estimated saving. Each tick's decisions are taken on the cluster as observed, so a
    decision counts for one tick: the cluster did not take the earlier ones."""

    ticks: int = 0
    actual_usd: float = 0.0
    policy_usd: float = 0.0

    @property
    def saving_usd(self) -> float:
        return self.actual_usd - self.policy_usd


@dataclass
class LoopStats:
    wakeups: int = 0
    ticks: int = 0
    skipped_ticks: int = 0
    retried_actions: int = 0
    orphans_terminated: int = 0
    adopted_instances: int = 0
    adopted_tasks: int = 0
    warnings: int = 0  # spot interruption warnings read
    errors: list[str] = field(default_factory=list)


class LiveLoop:
    """One virtual cluster, live. ``work`` reads and moves pods (stratus.live.kube),
    ``capacity`` launches and ends instances (stratus.live.ec2; None in shadow mode reads
    nodes only). ``cfg`` is the replay's configuration (tick, catalog, prices, market,
    migration rate, estimator). ``adopt`` (apply mode): take over the cluster's tagged
    instances and the pods on them at the start (a restart)."""

    def __init__(self, scheduler, cfg: ReplayConfig, work: KubeWork,
                 capacity: Ec2Capacity | None, clock: Clock, shadow: bool = False,
                 ice_window_s: float = 300.0, boot_timeout_s: float = 900.0,
                 adopt: bool = True, describe_every_s: float = 300.0) -> None:
        if not shadow and capacity is None:
            raise ConfigError("the live loop needs a capacity backend (EC2) to apply "
                              "decisions; --shadow only observes")
        if not boot_timeout_s > 0:
            raise ConfigError(f"boot timeout must be positive, got {boot_timeout_s!r}")
        self.scheduler = scheduler
        self.cfg = cfg
        self.work = work
        self.capacity = capacity
        self.clock = clock
        self.shadow = shadow
        self.ice_window_s = ice_window_s
        self.boot_timeout_s = boot_timeout_s
        # how often the cloud's own list of instances is read (a lost node is seen at once
        # through the cluster; this catches instances gone before they became nodes, and
        # orphans)
        self.describe_every_s = describe_every_s
        self._next_describe = -math.inf
        self.mirror = self._new_mirror(clock.now)
        self.cfg = self.mirror.cfg  # resolved (prices, catalog, estimator)
        self.stats = LoopStats()
        self.decisions: list[dict] = []  # canonical(...) of every non-empty tick
        self.estimate = ShadowEstimate()
        self.key_tid: dict[str, int] = {}  # task key -> id
        self.pod: dict[int, Pod] = {}  # id -> its pod as last seen (the one to act on)
        self.pod_name: dict[int, tuple[str, str]] = {}  # id -> the pod that is the task now
        self.base: dict[int, str] = {}  # id -> the name of its first pod
        self.gen: dict[int, int] = {}  # id -> pods made for it (re-created names)
        self.cloud_of: dict[int, CloudInstance] = {}  # iid -> its EC2 instance
        self.by_ext: dict[str, int] = {}
        self.outbox: list[_Action] = []
        self._last = clock.now  # the last wake-up: no event is put before it
        self._tick_s = self.cfg.tick_s
        self._started = False
        self._last_tick = -math.inf
        self._said: set[str] = set()  # unreadable pods already reported
        self._adopt = adopt and not shadow

    def _new_mirror(self, t: float) -> Mirror:
        m = Mirror(self.scheduler, self.cfg, t, None if self.shadow else self,
                   self.ice_window_s)
        m.watch_decisions(self._record)
        return m

    # --- the loop ----------------------------------------------------------------------
    def run(self, until: float | None = None, ticks: int | None = None,
            stop: Callable[[], bool] | None = None) -> None:
        """Run to the clock time ``until``, or for ``ticks`` ticks, or until ``stop()``
        says so after a tick (at least one must be given)."""
        if until is None and ticks is None and stop is None:
            raise ConfigError("LiveLoop.run needs until, ticks or stop")
        done = 0  # ticks run here, skipped ones included: a run of N ticks ends
        if not self._started:
            self._started = True
            if isinstance(self.scheduler, Resets):
                self.scheduler.reset()
        tick = self._tick_s
        while True:
            # ticks fall on whole multiples of the tick, as the engine's
            nxt = math.ceil(self.clock.now / tick - 1e-9) * tick
            if nxt <= self._last_tick:
                nxt = self._last_tick + tick
            if until is not None and nxt > until:
                for _ in self.clock.wakeups(until):
                    self.wake(False)
                return
            for _ in self.clock.wakeups(nxt):
                self.wake(False)
            self.wake(True)
            self._last_tick = nxt
            done += 1
            if ticks is not None and done >= ticks:
                return
            if stop is not None and stop():
                return

    def wake(self, tick: bool) -> None:
        """Look at the world now; bring the mirror up to it; at a tick, let the policy
        decide."""
        now = self.clock.now
        self.stats.wakeups += 1
        self._flush()
        try:
            if self._adopt:  # the first look: take over what is there (a restart)
                self._take_over()
                self._adopt = False
            pods, nodes = self.work.observe()
            cloud = warns = None
            if tick and self.capacity is not None and not self.shadow:
                warns = self.capacity.interruptions()
                if now >= self._next_describe:  # DescribeInstances is costly: not each tick
                    cloud = self.capacity.describe()
                    self._next_describe = now + self.describe_every_s
        except Unavailable as exc:
            self._error(f"t={now:g}: observation failed: {exc}")
            if tick:
                self.stats.skipped_ticks += 1
            return
        for name, why in self.work.unreadable.items():
            if name not in self._said:
                self._said.add(name)
                self._error(f"pod {name} left alone: {why}")
        if self.shadow:
            if tick:
                self._shadow_tick(pods, nodes, now)
            self._last = now
            return
        for _t, _k, _i, fn in sorted(self._events(pods, nodes, cloud, warns or (), now),
                                     key=lambda e: e[:3]):
            fn()
        self._last = now
        if tick:
            self._tick(pods, now)

    def _tick(self, pods: list[Pod], now: float) -> None:
        m = self.mirror
        m.at(now)
        self.stats.ticks += 1
        m.ticks += 1
        m.cloud.refresh_prices(now)
        self._arrive(pods, now)
        if m.book.pending or m.cloud.busy():
            m.decide()

    def _record(self, t: float, dec: Decisions) -> None:
        self.decisions.append(canonical(t, dec))

    def _error(self, line: str) -> None:
        self.stats.errors.append(line)
        del self.stats.errors[:-100]

    # --- times -------------------------------------------------------------------------
    def _at(self, when, now: float) -> float:
        """An observed time on the loop's clock, not before the last wake-up (the mirror
        is not rewritten) nor after now."""
        if when is None:
            return now
        return min(now, max(self._last, seconds(self.clock, when)))

    # --- what happened -----------------------------------------------------------------
    def _events(self, pods: list[Pod], nodes: list[Node], cloud, warns, now: float):
        m = self.mirror
        book = m.book
        out = []
        by_name = {(p.namespace, p.name): p for p in pods}
        for tid, key in list(self.pod_name.items()):
            pod = by_name.get(key)
            if pod is None:
                if not self._owed(tid):
                    out.append((now, _FINISH, tid, lambda tid=tid: self._ended(tid, now, True)))
                continue
            self.pod[tid] = pod
            if pod.phase in ("Succeeded", "Failed"):
                if book.state[tid] == MIGRATING and pod.started is not None:
                    t = self._at(pod.started, now)
                    out.append((t, _MIGRATED, tid, lambda tid=tid, t=t: self._migrated(tid, t)))
                t = self._at(pod.finished, now)
                out.append((t, _FINISH, tid, lambda tid=tid, t=t: self._ended(tid, t, False)))
            elif pod.phase == "Running" and book.state[tid] == MIGRATING:
                t = self._at(pod.started, now)
                out.append((t, _MIGRATED, tid, lambda tid=tid, t=t: self._migrated(tid, t)))
            elif (pod.phase == "Pending" and not pod.node and book.state[tid] != PENDING
                  and book.state[tid] != MIGRATING and not self._owed(tid)):
                # placed, but the binding was refused: the task is pending again
                out.append((now, _FINISH, tid, lambda tid=tid: self.mirror.unplace(tid, now)))
        nodes_by_ext = {n.ext_id: n for n in nodes if n.ext_id}
        described = None if cloud is None else {c.ext_id: c for c in cloud}
        for iid, inst in list(m.cloud.alive.items()):
            ci = self.cloud_of.get(iid)
            node = nodes_by_ext.get(ci.ext_id) if ci is not None else None
            gone = described is not None and ci is not None and (
                ci.ext_id not in described or described[ci.ext_id].state in GONE_STATES)
            if inst.state == REQUESTED:
                if node is not None and node.ready:
                    t = max(self._at(node.since, now), inst.requested_at)
                    out.append((t, _READY, iid, lambda inst=inst, t=t: self._up(inst, t)))
                elif gone or now - inst.requested_at >= self.boot_timeout_s:
                    out.append((now, _CRASH, iid, lambda inst=inst: self._down(inst, now)))
            elif node is None or gone:
                out.append((now, _REVOKE, iid, lambda inst=inst: self._lost(inst, now)))
            elif not node.ready:
                t = self._at(node.since, now)
                out.append((t, _CRASH, iid, lambda inst=inst, t=t: self._down(inst, t)))
        for ext, when in warns:
            iid = self.by_ext.get(ext)
            inst = m.cloud.alive.get(iid) if iid is not None else None
            self.stats.warnings += 1
            if inst is not None and inst.revoke_at is None:
                inst.revoke_at = seconds(self.clock, when) + SPOT_WARNING_S
        if described is not None:
            for c in described.values():  # launched by us, not known: never left running
                if c.state in LIVE_STATES and c.ext_id not in self.by_ext:
                    self._do(f"terminate orphan {c.ext_id}", self._terminate_ext(c.ext_id))
                    self.stats.orphans_terminated += 1
        return out

    def _ended(self, tid: int, t: float, vanished: bool) -> None:
        m = self.mirror
        if m.book.state[tid] == DONE:
            return
        if vanished:
            m.vanished += 1
        m.finished(tid, t)
        self._forget(tid)

    def _migrated(self, tid: int, t: float) -> None:
        if self.mirror.book.state[tid] == MIGRATING:
            self.mirror.migrated(tid, t)

    def _up(self, inst: Instance, t: float) -> None:
        if inst.state == REQUESTED:
            self.mirror.ready(inst, t)

    def _lost(self, inst: Instance, t: float) -> None:
        if inst.iid in self.mirror.cloud.alive:
            self.mirror.revoked(inst, t)

    def _down(self, inst: Instance, t: float) -> None:
        if inst.iid in self.mirror.cloud.alive:
            self.mirror.crashed(inst, t)

    def _forget(self, tid: int) -> None:
        self.pod_name.pop(tid, None)
        self.pod.pop(tid, None)

    # --- arrivals ----------------------------------------------------------------------
    def _task_fields(self, pod: Pod) -> dict:
        """A pod's task: its job and index, request in the catalog's units, estimate."""
        r = pod.requests
        amounts = [r.get("cpu", 0.0), r.get("memory", 0.0) / 2**30]
        if self.cfg.catalog.has_gpus:
            amounts.append(r.get("nvidia.com/gpu", 0.0))
        job = pod.labels.get(JOB_LABEL) or pod.key.rsplit("-", 1)[0]
        est = pod.annotations.get(ESTIMATE)
        try:
            estimate = float(est) if est is not None else None
        except ValueError:
            estimate = None
        if estimate is not None and not (estimate > 0 and math.isfinite(estimate)):
            estimate = None
        idx = pod.labels.get(INDEX_LABEL, "0")
        size = pod.labels.get(JOB_SIZE, "")
        return dict(job=int(job) if job.isdigit() else zlib.crc32(job.encode()),
                    job_size=int(size) if size.isdigit() and int(size) > 0 else None,
                    index=int(idx) if idx.isdigit() else 0, req=to_units(*amounts),
                    user=pod.namespace,
                    job_name=pod.annotations.get(ESTIMATE_KEY) or job, estimate=estimate,
                    anti_affinity=pod.annotations.get(ANTI_AFFINITY) == "true")

    def _fits_some_type(self, req) -> bool:
        return any(all(r <= c for r, c in zip(req, t.capacity)) for t in self.cfg.catalog)

    def _new_task(self, pod: Pod, now: float):
        f = self._task_fields(pod)
        if not self._fits_some_type(f["req"]):
            self._error(f"pod {pod.namespace}/{pod.name} requests {shown(f['req'])}, more than any "
                        f"catalog type holds: left alone")
            self.key_tid[pod.key] = -1
            return None
        task = self.mirror.add_task(submit=self._at(pod.created, now) if pod.created else now,
                                    **f)
        self.key_tid[pod.key] = task.tid
        self.pod[task.tid] = pod
        self.pod_name[task.tid] = (pod.namespace, pod.name)
        self.base[task.tid] = pod.name
        made = _MADE.match(pod.name) if pod.key != f"{pod.namespace}/{pod.name}" else None
        if made:  # a pod the loop made (before a restart): its first pod's name, its count
            self.base[task.tid] = made.group(1)
            self.gen[task.tid] = int(made.group(2))
        return task

    def _arrive(self, pods: list[Pod], now: float) -> None:
        sched = self.work.scheduler
        new = [p for p in pods if p.key not in self.key_tid and p.phase == "Pending"
               and not p.node and (sched is None or p.scheduler == sched)
               and (p.created is None or seconds(self.clock, p.created) <= now + 1e-9)]
        new.sort(key=lambda p: (p.created is not None, p.created, p.namespace, p.name))
        tasks = [t for t in (self._new_task(p, now) for p in new) if t is not None]
        if tasks:
            self.mirror.arrive(tasks)

    # --- the world (the mirror's World) ----------------------------------------------------
    def launch(self, iid: int, itype, market: str, bid: float | None, keep: bool) -> None:
        c = self.capacity.launch(iid, itype, market, bid, keep)  # Shortage, Unavailable
        self.cloud_of[iid] = c
        self.by_ext[c.ext_id] = iid

    def bind(self, tid: int, inst: Instance) -> None:
        (ns, name), node = self.pod_name[tid], self.cloud_of[inst.iid].node_name
        self._do(f"bind {name} to {node}", lambda: self.work.bind(ns, name, node), owes=tid)

    def _replace(self, tid: int, kind: str, node: str | None, checkpoint_s: float) -> None:
        """Delete the task's pod and make a new one (bound to ``node``, or pending),
        named after the task's first pod."""
        ns, old = self.pod_name[tid]
        g = self.gen[tid] = self.gen.get(tid, 0) + 1
        name = f"{self.base[tid]}-{kind}{g}"
        body = recreated(self.pod[tid], name, node, {CHECKPOINT: repr(float(checkpoint_s))})
        self.pod_name[tid] = (ns, name)

        def run() -> None:
            self.work.delete(ns, old)
            self.work.create(body)

        self._do(f"{kind} {old} -> {name}", run, owes=tid)

    def move(self, tid: int, dest: Instance, checkpoint_s: float) -> None:
        """A migration: the pod goes, a new one restores on the destination from the
        checkpoint (a stand-in for CRIU, module stratus.live.kube)."""
        self._replace(tid, "m", self.cloud_of[dest.iid].node_name, checkpoint_s)

    def requeue(self, tid: int) -> None:
        self._replace(tid, "r", None, 0.0)

    def terminate(self, inst: Instance) -> None:
        c = self.cloud_of.pop(inst.iid, None)
        if c is not None:
            self._do(f"terminate {c.ext_id}", self._terminate_ext(c.ext_id))

    def _terminate_ext(self, ext: str):
        def run() -> None:
            self.capacity.terminate([ext])
            self.by_ext.pop(ext, None)
        return run

    # --- the outbox --------------------------------------------------------------------
    def _do(self, what: str, run: Callable[[], None], owes: int | None = None) -> None:
        act = _Action(what, run, owes)
        try:
            run()
        except Refused as exc:
            self._error(f"t={self.clock.now:g}: {what}: {exc} (refused: dropped)")
        except Unavailable as exc:
            self._error(f"t={self.clock.now:g}: {what}: {exc} (will retry)")
            self.outbox.append(act)

    def _owed(self, tid: int) -> bool:
        """A binding or re-creation of the task's pod is still owed to the world."""
        return any(a.owes == tid for a in self.outbox)

    def _flush(self) -> None:
        if not self.outbox:
            return
        left = []
        for act in self.outbox:
            try:
                act.run()
                self.stats.retried_actions += 1
            except Refused as exc:
                self._error(f"t={self.clock.now:g}: {act.what}: {exc} (refused: dropped)")
            except Unavailable as exc:
                self._error(f"t={self.clock.now:g}: {act.what}: {exc} (will retry)")
                left.append(act)
        self.outbox = left

    # --- a restart: take over what is tagged ------------------------------------------------
    def _take_over(self) -> None:
        """Adopt the cluster's tagged instances that are up or coming up, and the pods on
        them, as they are (apply mode, at the start): a restart loses nothing it launched.
        Instances left empty are released (terminated) as the engine would."""
        now = self.clock.now
        pods, nodes = self.work.observe()
        found = [c for c in self.capacity.describe() if c.state in LIVE_STATES]
        if not found:
            return
        m = self.mirror
        catalog = self.cfg.catalog
        nodes_by_ext = {n.ext_id: n for n in nodes if n.ext_id}
        m.cloud.number_from(max([c.iid + 1 for c in found if c.iid is not None] + [0]))
        adopted: dict[str, Instance] = {}
        for c in sorted(found, key=lambda c: (c.iid is None, c.iid, c.ext_id)):
            if c.type_name not in catalog:
                self._error(f"instance {c.ext_id} is a {c.type_name}, not in the catalog: "
                            f"terminated")
                self._do(f"terminate {c.ext_id}", self._terminate_ext(c.ext_id))
                continue
            node = nodes_by_ext.get(c.ext_id)
            ready = self._at(node.since, now) if node is not None and node.ready else None
            inst = m.adopt(catalog[c.type_name], c.market, None, c.keep,
                           min(now, seconds(self.clock, c.launched)), ready)
            self.cloud_of[inst.iid] = c
            self.by_ext[c.ext_id] = inst.iid
            adopted[c.node_name] = inst
            if node is not None:
                adopted[node.name] = inst
        self.stats.adopted_instances += len(self.cloud_of)
        self.stats.adopted_tasks += self._adopt_tasks(pods, adopted, now)
        for inst in list(m.cloud.alive.values()):
            m.maybe_release(inst, now)

    def _adopt_tasks(self, pods: list[Pod], on_node: dict[str, Instance], now: float) -> int:
        """The queue's pods, then the pods on adopted instances (by node name), as the
        mirror's tasks: running since their start, from their checkpoint, or waiting for
        their instance. A pod its node cannot hold by the catalog's sizes stays pending.
        Returns how many were placed."""
        m = self.mirror
        sched = self.work.scheduler
        self._arrive([p for p in pods if p.phase == "Pending" and not p.node], now)
        placed = 0
        for pod in pods:
            inst = on_node.get(pod.node)
            if (inst is None or pod.phase not in ("Pending", "Running")
                    or (sched is not None and pod.scheduler != sched)):
                continue
            task = self._new_task(pod, now)
            if task is None:
                continue
            m.arrive([task])
            if any(r > f for r, f in zip(task.req, inst.free)):
                self._error(f"pod {pod.namespace}/{pod.name} overfills node {pod.node}: "
                            f"taken as pending")
                continue
            try:
                progress = float(pod.annotations.get(CHECKPOINT, 0.0))
            except ValueError:
                progress = 0.0
            m.place(task, inst, self._at(pod.started, now) if pod.phase == "Running"
                    else None, progress, now)
            placed += 1
        return placed

    # --- shadow mode -------------------------------------------------------------------
    def _node_instance(self, node: Node) -> tuple[str, str] | None:
        name = next((node.labels[k] for k in TYPE_LABELS if k in node.labels), None)
        if name is None or name not in self.cfg.catalog:
            return None
        market = self.cfg.market
        for k, table in MARKET_LABELS.items():
            if k in node.labels:
                market = table.get(node.labels[k], market)
        return name, market

    def _shadow_tick(self, pods: list[Pod], nodes: list[Node], now: float) -> None:
        """Build the cluster as it is, let the policy decide from a clean start, apply to
        that copy, and account for the difference."""
        self.stats.ticks += 1
        for d in (self.key_tid, self.pod, self.pod_name, self.base, self.gen):
            d.clear()
        m = self.mirror = self._new_mirror(now)
        if isinstance(self.scheduler, Resets):
            self.scheduler.reset()
        catalog = self.cfg.catalog
        on_node: dict[str, Instance] = {}
        names: dict[int, str] = {}
        for node in nodes:
            what = self._node_instance(node)
            if what is None or not node.ready or what not in m.cloud.current_price:
                continue
            inst = m.adopt(catalog[what[0]], what[1], None, False, now, now)
            on_node[node.name] = inst
            names[inst.iid] = node.name
        actual = sum(m.cloud.current_price[(i.itype.name, i.market)]
                     for i in m.cloud.alive.values())
        self._adopt_tasks(pods, on_node, now)
        idle = [i for i in m.cloud.alive.values() if not i.tasks]
        for inst in idle:  # the engine releases an instance left with no tasks at once
            m.maybe_release(inst, now)
        dec = m.decide() if (m.book.pending or m.cloud.busy()) else None
        if idle:
            entry = (self.decisions[-1] if dec and self.decisions
                     and self.decisions[-1]["t"] == now else None)
            if entry is None:
                entry = canonical(now, Decisions())
                self.decisions.append(entry)
            entry["idle_released"] = [i.iid for i in idle]
        moving = {m.book.loc[tid].iid for tid in m.book.mig_dest}
        policy = sum(m.cloud.current_price[(i.itype.name, i.market)]
                     for i in m.cloud.alive.values()
                     if not (i.iid in moving and all(t in m.book.mig_dest for t in i.tasks)))
        est = self.estimate
        est.ticks += 1
        est.actual_usd += actual * self._tick_s / 3600.0
        est.policy_usd += policy * self._tick_s / 3600.0
        self._names(now, names)

    def _names(self, now: float, nodes: dict[int, str]) -> None:
        """The names behind the last log entry's ids (shadow output): ``pods`` (task id
        -> namespace/name) and ``nodes`` (instance id -> node name)."""
        if not self.decisions or self.decisions[-1]["t"] != now:
            return
        e = self.decisions[-1]
        tids = {x[0] for x in (*e["place"], *e["migrate"])}
        for a in e["acquire"]:
            tids.update(a[2], a[3])
        iids = {x[1] for x in (*e["place"], *e["migrate"])}
        iids.update(e["release"], e.get("idle_released", ()))
        e["pods"] = {str(k): "/".join(self.pod_name[k]) for k in sorted(tids)}
        e["nodes"] = {str(k): nodes[k] for k in sorted(iids) if k in nodes}


__all__ = ["LiveLoop", "LoopStats", "ShadowEstimate", "canonical"]
