"""The simulation kernel (stratus.sim.kernel): event order, the time limit, stop, handlers;
each test on the pure reference and on the compiled kernel (issue 39), and the two side by
side."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratus.sim.kernel import COMPILED, PyKernel

KERNELS = [PyKernel] + ([COMPILED] if COMPILED is not None else [])
#: each test of the contract on both kernels
both = pytest.mark.parametrize("Kernel", KERNELS, ids=lambda k: k.__module__)


def _recording(Kernel, kinds: int):
    k, seen = Kernel(), []
    for kind in range(kinds):
        k.on(kind, lambda a, b, t, kind=kind: seen.append((t, kind, a, b, k.now)))
    return k, seen


@both
@given(st.lists(st.tuples(st.integers(0, 20).map(float), st.integers(0, 3)), max_size=60),
       st.randoms(use_true_random=False))
def test_events_run_by_time_then_kind_then_schedule_order(Kernel, events, rnd):
    k, seen = _recording(Kernel, 4)
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


@both
def test_handlers_may_schedule_and_the_limit_leaves_later_events_queued(Kernel):
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


@both
def test_stop_ends_the_run_after_the_handler(Kernel):
    k, seen = _recording(Kernel, 2)
    k.on(2, lambda a, b, t: k.stop())
    for t in (1.0, 2.0, 3.0):
        k.schedule(t, 0)
    k.schedule(2.0, 2)
    assert k.run() is False
    assert [t for t, *_ in seen] == [1.0, 2.0]  # kind 0 at 2.0 runs before kind 2 at 2.0
    assert k.stopped and len(k) == 1


@both
def test_one_handler_per_kind_and_no_negative_kinds(Kernel):
    k = Kernel()
    k.on(3, lambda a, b, t: None)
    with pytest.raises(ValueError, match="already has a handler"):
        k.on(3, lambda a, b, t: None)
    with pytest.raises(ValueError, match="non-negative"):
        k.on(-1, lambda a, b, t: None)
    assert Kernel().peek() == math.inf and Kernel(5.0).now == 5.0


@both
def test_an_empty_kernel_returns_at_once(Kernel):
    k = Kernel()
    assert k.run() is False and k.run(until=10.0) is False and k.now == 0.0


@both
def test_a_thousand_random_events_are_handled_exactly_once(Kernel):
    k, seen = _recording(Kernel, 8)
    rnd = random.Random(7)
    for i in range(1000):
        k.schedule(rnd.uniform(0, 100), rnd.randrange(8), i)
    k.run()
    assert sorted(a for _, _, a, _, _ in seen) == list(range(1000))


# --- the two side by side --------------------------------------------------------------

OPS = st.one_of(
    st.tuples(st.just("schedule"), st.integers(0, 12).map(float) | st.floats(0, 12),
              st.integers(0, 3), st.integers(0, 99)),
    st.tuples(st.just("run"), st.integers(0, 14).map(float) | st.just(math.inf)),
    st.tuples(st.just("peek_except"), st.integers(0, 3)),
)


def _driven(K):
    """A kernel whose handlers record, schedule more (kind 1) and stop the run (kind 2)."""
    k, log = K(), []

    def handler(kind):
        def h(a, b, t):
            log.append((t, kind, a, b, k.now))
            if kind == 1 and a % 3:
                k.schedule(t + (a % 5), a % 4, a // 3, "again")
            elif kind == 2:
                k.stop()
        return h

    for kind in range(4):
        k.on(kind, handler(kind))
    return k, log


@pytest.mark.skipif(COMPILED is None, reason="the compiled core is not built here")
@given(st.lists(OPS, max_size=80))
def test_the_compiled_kernel_takes_the_reference_steps(ops):
    """Each operation's answer and the state after it (clock, heap size, next time, what the
    handlers saw) are the same under both kernels."""
    pure, fast = _driven(PyKernel), _driven(COMPILED)
    for op in ops:
        out = []
        for k, log in (pure, fast):
            if op[0] == "schedule":
                got = k.schedule(*op[1:])
            elif op[0] == "run":
                got = k.run(until=op[1])
            else:
                got = k.peek_except(op[1])
            out.append(repr((got, k.now, len(k), k.peek(), k.stopped, log)))
        assert out[0] == out[1], op
