"""The simulation kernel (stratus.sim.kernel): event order, the time limit, stop, handlers."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratus.sim.kernel import Kernel


def _recording(kinds: int):
    k, seen = Kernel(), []
    for kind in range(kinds):
        k.on(kind, lambda a, b, t, kind=kind: seen.append((t, kind, a, b, k.now)))
    return k, seen


@given(st.lists(st.tuples(st.integers(0, 20).map(float), st.integers(0, 3)), max_size=60),
       st.randoms(use_true_random=False))
def test_events_run_by_time_then_kind_then_schedule_order(events, rnd):
    k, seen = _recording(4)
    order = list(range(len(events)))
    rnd.shuffle(order)  # the order events are scheduled in: any
    for i in order:
        t, kind = events[i]
        k.schedule(t, kind, i)
    assert k.run() is False
    assert [(t, kind) for t, kind, *_ in seen] == sorted(events)
    # equal time and kind: in the order they were scheduled
    pos = {i: n for n, i in enumerate(order)}
    for (t1, k1, a1, *_), (t2, k2, a2, *_) in zip(seen, seen[1:]):
        if (t1, k1) == (t2, k2):
            assert pos[a1] < pos[a2]
    assert all(now == t for t, _, _, _, now in seen)  # the clock is the event's time


def test_handlers_may_schedule_and_the_limit_leaves_later_events_queued():
    k, seen = Kernel(), []

    def tick(a, b, t):
        seen.append(t)
        k.schedule(t + 10.0, 0)

    k.on(0, tick)
    k.schedule(0.0, 0)
    assert k.run(until=35.0) is True
    assert seen == [0.0, 10.0, 20.0, 30.0]
    assert k.now == 35.0 and len(k) == 1 and k.peek() == 40.0
    assert k.run(until=55.0) is True  # resumes where it stopped
    assert seen[-2:] == [40.0, 50.0]


def test_stop_ends_the_run_after_the_handler():
    k, seen = _recording(2)
    k.on(2, lambda a, b, t: k.stop())
    for t in (1.0, 2.0, 3.0):
        k.schedule(t, 0)
    k.schedule(2.0, 2)
    assert k.run() is False
    assert [t for t, *_ in seen] == [1.0, 2.0]  # kind 0 at 2.0 runs before kind 2 at 2.0
    assert k.stopped and len(k) == 1


def test_one_handler_per_kind_and_no_negative_kinds():
    k = Kernel()
    k.on(3, lambda a, b, t: None)
    with pytest.raises(ValueError, match="already has a handler"):
        k.on(3, lambda a, b, t: None)
    with pytest.raises(ValueError, match="non-negative"):
        k.on(-1, lambda a, b, t: None)
    assert Kernel().peek() == math.inf and Kernel(5.0).now == 5.0


def test_an_empty_kernel_returns_at_once():
    k = Kernel()
    assert k.run() is False and k.run(until=10.0) is False and k.now == 0.0


def test_a_thousand_random_events_are_handled_exactly_once():
    k, seen = _recording(8)
    rnd = random.Random(7)
    for i in range(1000):
        k.schedule(rnd.uniform(0, 100), rnd.randrange(8), i)
    k.run()
    assert sorted(a for _, _, a, _, _ in seen) == list(range(1000))
