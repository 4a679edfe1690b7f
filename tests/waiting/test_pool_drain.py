"""The general pool's FCFS work-conserving queue pass (``_general``'s ``grown_pass``, in
its drain and in SWW's and compound's oracle) tests only the servers that grew and the
queued rows at once; here it must make every decision a brute-force pass makes: each
finish, every queued job in order against every server. Each case runs twice: at the
module's sizes, and with every pass as arrays and every pool placed as arrays."""

from __future__ import annotations

import heapq
import math
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import stratus.waiting.pool as pool
from stratus.waiting.pool import PoolSpec, WaitingPolicy, _general

EPS = 1e-9  # the pool's fit tolerance


def _brute(shapes, name, b, t_short, best, sub, rt, cpu, mem, horizon=None):
    """The pool by the book: at each instant the finishes, then one pass over the whole
    queue against every server, then AJW-T's departures, then arrivals (pool.py's order;
    events in the same (time, kind, job, server) order, so the room's sums are the same
    floats). SWW and compound ask the oracle: the same passes on a copy, ``horizon``
    (default b) ahead; its answers are returned too, (job, wait) in order."""
    n = len(sub)
    # Python floats (the same values) instead of numpy scalars: this loop asks for them
    # millions of times in a long queue's forecasts
    sub, rt, cpu, mem = (np.asarray(x, np.float64).tolist() for x in (sub, rt, cpu, mem))
    fc = [c for c, _ in shapes]
    fm = [m for _, m in shapes]
    cloud = np.zeros(n, bool)
    start = np.full(n, np.nan)
    server = np.full(n, -1)
    queue: list[int] = []
    events: list[tuple[float, int, int, int]] = []
    asked: list[tuple[int, float]] = []
    limit = b if horizon is None else horizon

    def fit(j, fc=fc, fm=fm):
        ks = [k for k in range(len(fc)) if fc[k] + EPS >= cpu[j] and fm[k] + EPS >= mem[j]]
        if not ks:
            return -1
        return min(ks, key=lambda k: (fc[k], k)) if best else ks[0]

    def oracle(j, t):
        fc2, fm2, ev, q, now = list(fc), list(fm), list(events), [*queue, j], t
        while True:
            rest = []
            for x in q:
                k = fit(x, fc2, fm2)
                if k < 0:
                    rest.append(x)
                    continue
                if x == j:
                    return now - t
                fc2[k] -= cpu[x]
                fm2[k] -= mem[x]
                heapq.heappush(ev, (now + rt[x], 0, x, k))
            q = rest
            if not ev or ev[0][0] - t > limit:
                return math.inf
            now = ev[0][0]
            while ev and ev[0][0] <= now:
                _, kind, x, k = heapq.heappop(ev)
                if kind == 0:
                    fc2[k] += cpu[x]
                    fm2[k] += mem[x]

    def run(j, k, t):
        fc[k] -= cpu[j]
        fm[k] -= mem[j]
        start[j], server[j] = t, k
        heapq.heappush(events, (t + rt[j], 0, j, k))

    def ask(j, t):
        asked.append((j, oracle(j, t)))
        return asked[-1][1]

    i = 0
    while i < n or events:
        t_next = sub[i] if i < n else math.inf
        if events and events[0][0] <= t_next:
            t = events[0][0]
            finished = False
            while events and events[0][0] <= t and events[0][1] == 0:
                _, _, j, k = heapq.heappop(events)
                fc[k] += cpu[j]
                fm[k] += mem[j]
                finished = True
            if finished:
                for j in list(queue):
                    k = fit(j)
                    if k >= 0:
                        queue.remove(j)
                        run(j, k, t)
            while events and events[0][0] <= t and events[0][1] == 1:
                _, _, j, _ = heapq.heappop(events)
                if j in queue:
                    queue.remove(j)
                    cloud[j], start[j] = True, t
            continue
        j, t = i, t_next
        i += 1
        fits_type = any(cpu[j] <= c + EPS and mem[j] <= m + EPS for c, m in shapes)
        if not fits_type or (name in ("ljw", "compound") and rt[j] < t_short):
            cloud[j], start[j] = True, t
            continue
        k = fit(j)
        if k >= 0:
            run(j, k, t)
        elif name == "njw" or (name in ("sww", "compound") and ask(j, t) > b):
            cloud[j], start[j] = True, t
        else:
            queue.append(j)
            if name == "ajw-t":
                heapq.heappush(events, (t + b, 1, j, -1))
    return cloud, start, server, asked


def _pool(spec, name, b, t_short, sub, rt, cpu, mem, observe=None):
    """The general path itself (``simulate`` takes the unit one where it can)."""
    n = len(sub)
    short = rt < t_short if name in ("ljw", "compound") else np.zeros(n, bool)
    return _general(spec, WaitingPolicy(name, b, t_short), sub, rt, cpu, mem,
                    spec.fits(cpu, mem), short, np.zeros(n, bool), np.zeros(n, bool), rt,
                    observe=observe)


shapes = st.lists(st.sampled_from([(8.0, 32.0), (4.0, 16.0), (16.0, 64.0), (2.5, 7.5)]),
                  min_size=1, max_size=5)


@settings(max_examples=40, deadline=None)  # up to 400 jobs, the pool run four times each
@given(seed=st.integers(0, 10**6), shapes=shapes,
       name=st.sampled_from(["njw", "ajw", "ajw-t", "ljw", "sww", "compound"]),
       best=st.booleans(),
       b=st.sampled_from([0.0, 60.0, 600.0, 5000.0]), n=st.integers(1, 400),
       gap=st.sampled_from([1.0, 10.0, 60.0]))
def test_the_queue_pass_is_the_brute_force_pass(seed, shapes, name, best, b, n, gap):
    rng = np.random.default_rng(seed)
    # whole seconds: finishes and departures meet arrivals at the same instant
    sub = np.cumsum(rng.integers(0, 3, n) * gap).astype(np.float64)
    rt = rng.integers(1, 40, n) * gap
    cpu = rng.choice([0.1, 0.5, 1.0, 2.0, 2.5, 4.0, 8.0, 12.0, 20.0], n)
    mem = rng.choice([0.3, 1.0, 4.0, 7.5, 16.0, 40.0, 70.0], n)
    spec = PoolSpec.mixed(shapes, "best-fit" if best else "first-fit")
    cloud, start, server, _ = _brute(spec.server_shapes(), name, b, 300.0, best, sub, rt,
                                     cpu, mem)
    # the oracle's every answer, as ``observe`` sees them (they look 4b ahead)
    *_, asked = _brute(spec.server_shapes(), name, b, 300.0, best, sub, rt, cpu, mem, 4 * b)
    for few, wide in ((pool._FEW, pool._WIDE), (0, 0)):
        seen = []
        with mock.patch.multiple(pool, _FEW=few, _WIDE=wide):
            run = _pool(spec, name, b, 300.0, sub, rt, cpu, mem)
            _pool(spec, name, b, 300.0, sub, rt, cpu, mem,
                  observe=lambda j, x, w, seen=seen: seen.append((j, w)))
        assert (run.cloud == cloud).all()
        assert np.array_equal(run.start, start, equal_nan=True)
        assert (run.server == server).all()
        assert seen == asked


def test_a_long_queue_keeps_its_order_through_compaction():
    """More than the queue's first 256 rows wait on one server while AJW-T's timers
    leave holes: the rows are compacted and grown, and jobs still start in FCFS order."""
    n = 1200
    sub = np.arange(n, dtype=np.float64)
    rt = np.full(n, 7.0)
    cpu = np.where(np.arange(n) % 3 == 0, 8.0, 4.0)
    mem = np.ones(n)
    for name in ("ajw", "ajw-t"):
        spec = PoolSpec.mixed([(8.0, 32.0)])
        run = _pool(spec, name, 300.0, 0.0, sub, rt, cpu, mem)
        cloud, start, server, _ = _brute(spec.server_shapes(), name, 300.0, 0.0, True, sub,
                                         rt, cpu, mem)
        assert (run.cloud == cloud).all() and (run.server == server).all()
        assert np.array_equal(run.start, start, equal_nan=True)
        pool = np.flatnonzero(~run.cloud)
        assert (np.diff(run.start[pool]) >= 0).all()  # one server, FCFS: starts in order


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), shapes=st.lists(st.sampled_from([(8.0, 32.0), (4.0, 16.0)]),
                                                   min_size=2, max_size=5),
       best=st.booleans(), b=st.sampled_from([300.0, 1500.0]))
def test_the_oracle_is_the_brute_force_oracle(seed, shapes, best, b):
    """SWW's every forecast (``observe`` sees it) on a crowded pool, where queues are
    long and forecasts run through many finishes."""
    rng = np.random.default_rng(seed)
    n = 80
    sub = np.cumsum(rng.integers(0, 3, n) * 10.0)
    rt = rng.integers(1, 40, n) * 10.0
    cpu = rng.choice([0.5, 1.0, 2.0, 4.0], n)
    mem = rng.choice([1.0, 4.0, 8.0], n)
    spec = PoolSpec.mixed(shapes, "best-fit" if best else "first-fit")
    *_, asked = _brute(spec.server_shapes(), "sww", b, 0.0, best, sub, rt, cpu, mem, 4 * b)
    for few in (pool._FEW, 0):
        seen = []
        with mock.patch.multiple(pool, _FEW=few):
            _pool(spec, "sww", b, 0.0, sub, rt, cpu, mem,
                  observe=lambda j, x, w, seen=seen: seen.append((j, w)))
        assert seen == asked
