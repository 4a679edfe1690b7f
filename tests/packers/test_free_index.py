"""The first-fit capacity index answers exactly as a left-to-right scan would."""

from __future__ import annotations

from itertools import count

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stratus.base.resources import fits
from stratus.packers.first_fit import FirstFit
from stratus.packers.free_index import DEAD, FreeTree, LiveIndex
from stratus.policy.compose import Plan
from stratus.sim.model import READY, RELEASED, Task
from tests.helpers.reference import scan_first_fit

small = st.integers(0, 12)
vec = st.tuples(small, small)


def scan(values, req, lo=0):
    return next((s for s, v in enumerate(values) if s >= lo and fits(req, v)), -1)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(vec, st.just((DEAD, DEAD))), max_size=40),
       st.lists(st.tuples(st.booleans(), st.integers(0, 39), vec), max_size=60),
       st.sampled_from([1, 3, 64]))
def test_tree_finds_the_leftmost_fit(values, ops, cap):
    tree = FreeTree(values, cap=cap)
    values = list(values)
    for is_set, slot, v in ops:
        if is_set and values:
            slot %= len(values)
            values[slot] = v
            tree.set(slot, *v)
        else:
            assert tree.find(*v) == scan(values, v)
            lo = slot % max(1, len(values))
            assert tree.find(*v, lo) == scan(values, v, lo)
    for v in [(0, 0), (12, 12), (5, 7)]:
        assert tree.find(*v) == scan(values, v)


class FakeInst:
    __slots__ = ("iid", "free", "state")

    def __init__(self, iid, free):
        self.iid, self.free, self.state = iid, free, READY


class FakeView:
    """Just what FirstFit and Plan read: live instances by id, oldest first."""

    def __init__(self):
        self.alive: dict[int, FakeInst] = {}
        self.market = "on-demand"

    @property
    def instances(self):
        return self.alive.values()

    def instance(self, iid):
        return self.alive[iid]


# one step between looks: acquire, change a free capacity, release (with or without a
# change of free capacity, as a revoked or an idle kept instance), or look up a request a
# few times (taking what it gets, sometimes giving capacity back in between)
step = st.one_of(
    st.tuples(st.just("acquire"), vec),
    st.tuples(st.just("change"), st.integers(0, 10**6), vec),
    st.tuples(st.just("release"), st.integers(0, 10**6), st.booleans()),
    st.tuples(st.just("query"), vec, st.integers(1, 4), st.integers(-3, 10**6)),
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(step, max_size=120), st.sampled_from([1, 2, 64]))
@example([("acquire", (3, 3))] * 6 + [("query", (1, 1), 1, -1)] + [("release", 0, True)] * 5
         + [("query", (1, 1), 1, -1), ("acquire", (4, 4)), ("query", (4, 4), 1, -1)], 1)
def test_live_index_follows_the_view(steps, min_cap):
    view, index, next_iid = FakeView(), LiveIndex(min_cap), 0
    for op, *args in steps:
        live = list(view.alive.values())
        if op == "acquire":
            view.alive[next_iid] = FakeInst(next_iid, args[0])
            next_iid += 1
        elif op == "change" and live:
            live[args[0] % len(live)].free = args[1]
        elif op == "release" and live:
            inst = live[args[0] % len(live)]
            inst.state = RELEASED
            if args[1]:
                inst.free = (inst.free[0] + 1, inst.free[1])
            del view.alive[inst.iid]
        elif op == "query":  # the same request a few times, as a job's tasks
            index.sync(view.instances)
            for _ in range(args[1]):
                want = next((i for i in view.alive.values() if fits(args[0], i.free)), None)
                got = index.first_fit(args[0])
                assert got is want
                if got is not None:  # take it, as a placement would
                    got.free = (got.free[0] - args[0][0], got.free[1] - args[0][1])
                    index.update(got, got.free)
                if args[2] >= 0 and view.alive:  # and sometimes give some back
                    live = list(view.alive.values())
                    inst = live[args[2] % len(live)]
                    inst.free = (inst.free[0] + 2, inst.free[1] + 1)
                    index.update(inst, inst.free)


@pytest.mark.slow
@settings(max_examples=75, deadline=None)
@given(st.lists(st.tuples(st.lists(vec, max_size=4), st.lists(vec, max_size=8),
                          st.lists(st.integers(0, 10**6), max_size=3)), max_size=12))
def test_first_fit_places_as_the_scan_does(ticks):
    """Over several ticks (new instances, tasks leaving, releases), the indexed packer
    places every task where the scanning one does."""
    view, packer, tid, iids = FakeView(), FirstFit(), 0, count()
    for new_frees, reqs, leave in ticks:
        for f in new_frees:
            iid = next(iids)  # ids are never reused, as in the engine
            view.alive[iid] = FakeInst(iid, f)
        for k in leave:  # a task finishing frees capacity; every third empties it
            live = list(view.alive.values())
            if live:
                inst = live[k % len(live)]
                if k % 3 == 0:
                    inst.state = RELEASED
                    del view.alive[inst.iid]
                else:
                    inst.free = (inst.free[0] + 1, inst.free[1] + 2)
        tasks = []
        for r in reqs:
            tasks.append(Task(tid, 0, tid, 0.0, 1.0, r))
            tid += 1
        plan_a, plan_b = Plan(view), Plan(view)
        left_a = packer.pack(view, plan_a, tasks)
        left_b = scan_first_fit(view, plan_b, tasks)
        assert left_a == left_b
        got = [(p.task.tid, p.instance.iid) for p in plan_a.decisions.placements]
        assert got == [(p.task.tid, p.instance.iid) for p in plan_b.decisions.placements]
        for p in plan_a.decisions.placements:  # the engine applies the plan
            inst = p.instance
            inst.free = tuple(f - r for f, r in zip(inst.free, p.task.req))
