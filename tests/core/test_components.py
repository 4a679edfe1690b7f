"""The engine's components on their own (issue 21, item 1): the task book, the cloud,
accounting and decision application, each driven without the engine's loop."""

from __future__ import annotations

import math

import pytest

from stratus.base.errors import DecisionError
from stratus.pricing.catalog import M4
from stratus.pricing.prices import ON_DEMAND, SPOT, PriceBook, PriceSeries
from stratus.sim.accounting import Accounting
from stratus.sim.apply import DecisionApplier
from stratus.sim.cloud import SPOT_WARNING_S, Cloud
from stratus.sim.decisions import Acquire, Decisions, Migrate, Place
from stratus.sim.estimate import OracleEstimator
from stratus.sim.events import EV_CRASH, EV_PRICE, EV_READY, EV_REVOKE, KINDS
from stratus.sim.faults import Faults
from stratus.sim.kernel import Kernel
from stratus.sim.model import DONE, PENDING, READY, RELEASED, RUNNING, WAITING, Task
from stratus.sim.taskbook import TaskBook, Workload
from tests.helpers.trace import make_trace

XL = M4["m4.xlarge"]  # 4 vCPU, 16 GiB


def _book(rows=((0, 0, 0.0, 600.0, 1, 4), (0, 1, 0.0, 900.0, 1, 4), (1, 0, 90.0, 60.0, 2, 8))):
    work = Workload(make_trace(list(rows)), M4, anti_affinity=True)
    return work, TaskBook(work, keep_job_tasks=True)


def _cloud(kernel, spot=None, faults=None, spinup=(30.0, 30.0), record=True):
    book = PriceBook.on_demand(M4)
    markets = (ON_DEMAND,)
    if spot is not None:
        book = book.with_series({(t.name, SPOT): spot for t in M4})
        markets = (ON_DEMAND, SPOT)
    return Cloud(kernel, M4, book, markets, spinup, seed=1, faults=faults, record=record)


def _events(kernel):
    """The kernel's queued events as (time, kind name), in order (drains it)."""
    out = []
    for kind in range(len(KINDS)):
        kernel.on(kind, lambda a, b, t, kind=kind: out.append((t, KINDS[kind])))
    kernel.run()
    return out


# --- the task book ------------------------------------------------------------------------
def test_tasks_arrive_in_submit_order_with_their_estimates():
    work, book = _book()
    assert work.n == 3 and list(work.job_tasks) == [2, 1]
    book.arrive(60.0, OracleEstimator())
    assert [t.tid for t in book.pending] == [0, 1] and book.next_arrival == 2
    assert book.est[:2] == [600.0, 900.0] and math.isnan(book.est[2])
    assert not book.all_arrived
    book.arrive(90.0, OracleEstimator())
    assert book.all_arrived and book.pending[-1].req == (2000, 8192)


def test_known_tells_this_books_objects_from_look_alikes():
    work, book = _book()
    book.arrive(0.0, OracleEstimator())
    t0 = book.pending[0]
    assert book.known(t0)
    assert not book.known(work.make_task(0))  # same id, another object
    assert not book.known(Task(99, 0, 0, 0.0, 1.0, (1, 1)))
    book.tasks[0], book.state[0] = None, DONE  # finished: its object is dropped
    assert book.known(t0)


def test_a_job_ends_with_its_last_task_and_hands_its_tasks_over():
    work, book = _book()
    book.arrive(0.0, OracleEstimator())
    a, b = book.pending
    assert book.job_finished(0, a, 600.0) is None and math.isnan(book.job_end[0])
    assert book.job_finished(1, b, 900.0) == [a, b] and book.job_end[0] == 900.0


# --- the cloud -----------------------------------------------------------------------------
def test_an_instance_is_ready_after_its_spin_up_and_billed_per_second():
    k = Kernel()
    cloud = _cloud(k)
    inst = cloud.request(XL, ON_DEMAND, None, False, 0.0)
    assert inst.iid in cloud.alive and inst.bid is None
    assert _events(k) == [(30.0, "ready")]
    cloud.ready(inst, 30.0)
    assert inst.state == READY and inst.ready_at == 30.0
    cloud.release(inst, 3600.0)
    assert inst.state == RELEASED and not cloud.alive and len(cloud.ledger) == 1
    assert inst.cost == pytest.approx(XL.ondemand_hourly)  # an hour from the request
    assert cloud.released == [inst]


def test_a_spot_bid_below_the_price_gets_the_two_minute_warning():
    k = Kernel()
    cloud = _cloud(k, spot=PriceSeries([0.0, 600.0], [0.05, 5.0]))
    cloud.open_prices(0.0)
    low = cloud.request(XL, SPOT, 0.01, False, 0.0)  # below the price now: warned at once
    ok = cloud.request(XL, SPOT, None, False, 0.0)  # bids on-demand: warned when it rises
    assert low.revoke_at == SPOT_WARNING_S and ok.bid == XL.ondemand_hourly
    assert cloud.price_events == len(M4.types)
    k.on(EV_PRICE, lambda key, b, t: cloud.on_price(key, t))
    seen = []
    for kind in (EV_REVOKE, EV_READY):
        k.on(kind, lambda a, b, t, kind=kind: seen.append((t, KINDS[kind], a.iid)))
    k.run()
    assert ok.revoke_at == 600.0 + SPOT_WARNING_S and cloud.price_events == 0
    assert (SPOT_WARNING_S, "revoke", low.iid) in seen
    assert (600.0 + SPOT_WARNING_S, "revoke", ok.iid) in seen


def test_a_request_the_provider_cannot_fill_is_refused_at_once_and_never_billed():
    k = Kernel()
    cloud = _cloud(k, faults=Faults(ice_prob=1.0, ice_window_s=600.0))
    assert cloud.request(XL, ON_DEMAND, None, False, 100.0) is None
    assert len(k) == 0 and not cloud.alive  # no instance, no event: the answer is the refusal
    assert cloud.ice_failures == cloud.ice_shortages == 1
    assert cloud.failed_requests == [(100.0, XL.name, ON_DEMAND)]
    assert cloud.known_unavailable[XL.name] == 100.0 + 600.0
    assert cloud.shortage_forever()
    state = cloud._frng.bit_generator.state
    assert cloud.request(XL, ON_DEMAND, None, False, 699.0) is None  # in the window
    assert cloud._frng.bit_generator.state == state  # refused without a draw
    assert cloud.ice_failures == 2 and cloud.ice_shortages == 1
    assert cloud.request(XL, ON_DEMAND, None, False, 700.0) is None  # over: a fresh draw
    assert cloud.ice_shortages == 2 and cloud.known_unavailable[XL.name] == 1300.0
    assert len(cloud.ledger) == 0 and cloud.released == []


def test_crashes_are_scheduled_from_the_moment_an_instance_is_up():
    k = Kernel()
    cloud = _cloud(k, faults=Faults(crash_per_hour=1.0))
    inst = cloud.request(XL, ON_DEMAND, None, False, 0.0)
    k2 = []
    k.on(EV_READY, lambda a, b, t: (cloud.ready(a, t), k2.append("ready")))
    k.on(EV_CRASH, lambda iid, b, t: k2.append(("crash", iid, t > 30.0)))
    k.run()
    assert k2 == ["ready", ("crash", inst.iid, True)]


# --- accounting ------------------------------------------------------------------------------
def test_idle_time_is_booked_by_the_instances_state():
    k = Kernel()
    cloud, acct = _cloud(k), Accounting(2, record=True)
    inst = cloud.request(XL, ON_DEMAND, None, False, 0.0)
    cloud.ready(inst, 0.0)
    one = Task(0, 0, 0, 0.0, 100.0, (1000, 4096))  # a quarter of the instance: low, one task
    acct.touch(inst, 0.0)
    inst._tasks[0] = one
    inst.free = (3000, 12288)
    acct.touch(inst, 100.0)
    assert acct.idle_single == [3000 * 100.0, 12288 * 100.0] and acct.idle_low == [0.0, 0.0]
    inst.free = (0, 8192)  # all its CPU taken: fragmentation none, the memory left is shape
    acct.touch(inst, 200.0)
    assert acct.idle_frag == [0.0, 0.0] and acct.idle_shape == [0.0, 8192 * 100.0]
    assert inst.used_integral == [1000 * 100.0 + 4000 * 100.0, 4096 * 100.0 + 8192 * 100.0]
    snap = acct.snapshot()
    assert snap.idle_low_one_task == acct.idle_single and snap.idle_shape == acct.idle_shape
    assert snap.fullest == pytest.approx(0.25 * 4000 * 100.0 + 1.0 * 4000 * 100.0)


def test_segments_transfers_and_losses_add_up_in_the_snapshot():
    acct = Accounting(2, record=True)
    acct.segment(3, 10.0, 50.0, iid=7)
    acct.segment(4, 20.0, 20.0, iid=7)  # empty: not a segment
    acct.transfer((1000, 2048), 8.0)
    acct.transfer((1000, 2048), -3.0)  # cut short
    acct.lose(40.0, 40.0, 0.25)
    snap = acct.snapshot()
    assert list(snap.seg_tid) == [3] and list(snap.seg_start) == [10.0] and acct.seg_iid == [7]
    assert snap.migration_seconds == 5.0 and snap.transfer == [5000.0, 10240.0]
    assert (snap.lost_task_s, snap.lost_core_s, snap.lost_usd) == (40.0, 40.0, 0.25)


# --- decision application ---------------------------------------------------------------------
class _Act:
    """An actuator that records what it is asked to do (as a live driver would)."""

    def __init__(self, cloud, book):
        self.cloud, self.book, self.calls = cloud, book, []

    def acquire(self, itype, market, bid, keep, t):
        self.calls.append(("acquire", itype.name, market))
        return self.cloud.request(itype, market, bid, keep, t)

    def refused(self, tasks, migrations):
        self.calls.append(("refused", tasks, migrations))

    def hold(self, inst, task, t):
        self.calls.append(("hold", inst.iid, task.tid))
        inst._tasks[task.tid] = task
        inst.free = tuple(f - r for f, r in zip(inst.free, task.req))

    def start(self, task, t):
        self.calls.append(("start", task.tid))
        self.book.state[task.tid] = RUNNING

    def begin_transfer(self, task, t):
        self.calls.append(("transfer", task.tid))

    def release(self, inst, t):
        self.calls.append(("release", inst.iid))
        self.cloud.release(inst, t)

    def maybe_release(self, inst, t):
        if not inst._tasks and not inst.keep:
            self.release(inst, t)


class _Policy:
    name = "p"


def _applier(faults=None):
    k = Kernel()
    work, book = _book()
    book.arrive(0.0, OracleEstimator())
    cloud = _cloud(k, faults=faults)
    act = _Act(cloud, book)
    return DecisionApplier(book, cloud, act, k, _Policy()), book, cloud, act


def _acquire(*tasks, itype=XL, market=ON_DEMAND, keep=False):
    return Decisions(acquisitions=[Acquire(itype, market, list(tasks), keep=keep)])


def test_decisions_are_applied_in_order_through_the_actuator():
    ap, book, cloud, act = _applier()
    a, b = book.pending
    ap.apply(_acquire(a))
    inst = next(iter(cloud.alive.values()))
    assert book.state[a.tid] == WAITING and book.loc[a.tid] is inst
    assert [p.tid for p in book.pending] == [b.tid]
    cloud.ready(inst, 30.0)
    ap.apply(Decisions(placements=[Place(b, inst)]))
    assert act.calls == [("acquire", XL.name, ON_DEMAND), ("hold", inst.iid, a.tid),
                         ("hold", inst.iid, b.tid), ("start", b.tid)]
    assert book.pending == []


def test_a_refused_acquisition_leaves_its_tasks_pending_in_their_place():
    ap, book, cloud, act = _applier(Faults(ice_prob=1.0, ice_window_s=60.0))
    a, b = book.pending
    ap.apply(Decisions(acquisitions=[Acquire(XL, ON_DEMAND, [a]),
                                     Acquire(M4["m4.large"], ON_DEMAND, [b])]))
    assert act.calls == [("acquire", XL.name, ON_DEMAND), ("refused", 1, 0),
                         ("acquire", "m4.large", ON_DEMAND), ("refused", 1, 0)]
    assert book.pending == [a, b] and book.state[:2] == [PENDING, PENDING]
    assert book.loc[a.tid] is None and not cloud.alive and len(ap.clock) == 0


@pytest.mark.parametrize("bad, message", [
    (lambda a, b, inst: Decisions(placements=[Place(a, inst)]), "is not pending"),
    (lambda a, b, inst: Decisions(releases=[inst]), "still holds tasks"),
    (lambda a, b, inst: _acquire(b, b), "is not pending"),
    (lambda a, b, inst: _acquire(b, b, b, b, b, itype=M4["m4.large"]), "do not fit"),
    (lambda a, b, inst: _acquire(b, market=SPOT), "market 'spot' is not allowed"),
    (lambda a, b, inst: Decisions(migrations=[Migrate(b, inst)]), "cannot migrate"),
    (lambda a, b, inst: Decisions(keep={inst.iid + 100: True}), "is not live"),
])
def test_a_bad_decision_is_refused_with_the_policy_the_time_and_why(bad, message):
    ap, book, cloud, act = _applier()
    a, b = book.pending
    ap.apply(_acquire(a))
    inst = next(iter(cloud.alive.values()))
    with pytest.raises(DecisionError, match=rf"scheduler 'p' at t=0\.000s: .*{message}"):
        ap.apply(bad(a, b, inst))


def test_a_release_of_an_empty_instance_and_a_keep_flag_reach_the_cloud():
    ap, book, cloud, act = _applier()
    ap.apply(_acquire(keep=True))
    inst = next(iter(cloud.alive.values()))
    assert inst.keep and inst.was_kept
    ap.apply(Decisions(keep={inst.iid: False}))
    assert inst.state == RELEASED and ("release", inst.iid) in act.calls
    assert book.state == [PENDING] * 3


# --- the result reads public state only ----------------------------------------------------
def test_the_result_and_the_view_read_no_private_attribute_of_another_object():
    """ReplayResult.build and ClusterView read the components' public fields (issue 21): no
    ``x._name`` where x is not the object itself (``self``/``cls``). Instance's own
    bookkeeping (``inst._tasks``) is the model's, read where the model documents it."""
    import ast
    from pathlib import Path

    import stratus.sim.result
    import stratus.sim.view

    allowed = {"_tasks"}  # Instance.tasks' backing dict (stratus/sim/model.py), for speed
    for mod in (stratus.sim.result, stratus.sim.view):
        tree = ast.parse(Path(mod.__file__).read_text())
        bad = [f"{mod.__name__}:{n.lineno}: .{n.attr}" for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and n.attr.startswith("_")
               and not n.attr.startswith("__") and n.attr not in allowed
               and not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"))]
        assert not bad, bad
