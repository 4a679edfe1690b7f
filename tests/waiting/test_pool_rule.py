"""The general pool as a class (``_EventPool``, issue 37 item 5) decides as the function it
replaced (``tests/helpers/pool_reference.py``), and asks its one queue rule (``may_pass``)
at each of the three ways a job reaches the servers outside a queue pass: its arrival, the
re-queue of a killed speculation, the restart of a revoked one (ljw-spec, 003 §3.1)."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import stratus.waiting.pool as pool
import tests.helpers.pool_reference as reference
from stratus.waiting.pool import POLICIES, PoolSpec, WaitingPolicy

shapes = st.lists(st.sampled_from([(4.0, 16.0), (8.0, 32.0), (2.0, 8.0)]), min_size=1,
                  max_size=3)


def _outcome(run) -> tuple:
    """Everything a run decides, as bytes and lists (equal only when bit-identical)."""
    return (run.cloud.tobytes(), run.start.tobytes(), run.wait.tobytes(),
            run.server.tobytes(), run.fits.tobytes(),
            None if run.killed is None else run.killed.tobytes(), run.speculations)


@settings(max_examples=100, deadline=None)
# ljw-spec half the time: its re-queues and restarts are two of the rule's three askers
@given(seed=st.integers(0, 10**6), shapes=shapes,
       name=st.one_of(st.sampled_from(POLICIES), st.just("ljw-spec")),
       best=st.booleans(), sjf=st.booleans(), wc=st.booleans(),
       b=st.sampled_from([0.0, 50.0, 300.0]), t=st.sampled_from([0.0, 100.0, 250.0]),
       short_first=st.booleans(), timer=st.booleans(), spot=st.booleans(),
       ask=st.sampled_from(["oracle", "observe", "predictor"]), arrays=st.booleans())
def test_the_pool_class_decides_as_the_function_and_asks_one_rule(
        seed, shapes, name, best, sjf, wc, b, t, short_first, timer, spot, ask, arrays):
    # a crowded small pool: arrivals at shared instants faster than the jobs finish, so
    # queues stand when jobs arrive, re-queue and restart, and the rule's answer matters
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 41))
    sub = np.cumsum(rng.integers(0, 3, n) * 10.0)
    rt = rng.integers(1, 30, n) * 10.0
    cpu = rng.choice([0.5, 1.0, 2.0, 3.0, 4.0, 6.0], n)
    mem = rng.choice([1.0, 4.0, 8.0, 12.0], n)
    key = rt * rng.uniform(0.5, 1.5, n)  # SJF by an estimate, not the runtime
    spec = PoolSpec.mixed(shapes, "best-fit" if best else "first-fit",
                          "sjf" if sjf else "fcfs", wc)
    policy = WaitingPolicy(name, b, t)
    fits = spec.fits(cpu, mem)
    short = (rng.random(n) < 0.4) if name in ("ljw", "compound") else np.zeros(n, bool)
    over, under = rng.random(n) < 0.15, rng.random(n) < 0.15
    gap = rng.integers(1, 10, n) * 10.0
    revocation = None
    if spot and name == "ljw-spec":  # about half the speculations are revoked, before t

        def revocation(j, at):
            return at + gap[j] if (j + int(at) // 10) % 2 == 0 else np.inf

    def run(general, seen):
        kw = {"short_first": short_first, "timer": timer, "revocation": revocation}
        if ask != "oracle":
            kw["observe"] = lambda j, x, w: seen.append((j, list(x), w))
        if ask == "predictor":
            kw["predictor"] = lambda x: 60.0 * x[1] - 10.0 * x[0]
        few = wide = 0 if arrays else 128
        with mock.patch.multiple(pool, _FEW=few, _WIDE=wide), \
                mock.patch.multiple(reference, _FEW=few, _WIDE=wide):
            return general(spec, policy, sub, rt, cpu, mem, fits, short, over, under, key,
                           **kw)

    seen_ref: list = []
    want = run(reference.general, seen_ref)
    seen: list = []
    asked: list[int] = []
    rule = pool._EventPool.may_pass

    def spy(self, j):
        asked.append(j)
        return rule(self, j)

    with mock.patch.object(pool._EventPool, "may_pass", spy):
        got = run(pool._general, seen)
    assert _outcome(got) == _outcome(want)
    assert seen == seen_ref  # every forecast: the same job, features and wait
    # the rule is asked once at every arrival that may use the pool, every re-queue and
    # every restart, and nowhere else
    arrivals = int((fits & ~(short & (not short_first))).sum())
    outcomes = [o for *_, o in (got.speculations or [])]
    assert len(asked) == arrivals + outcomes.count("killed") + outcomes.count("revoked")


def test_no_way_onto_the_pool_jumps_a_held_queue():
    """One 4-core server, FCFS, only the head starts (not work-conserving), ljw-spec with
    t = 100 s. Job 0 (3 cores) holds the server until 1000; job 1 (4 cores) is killed at
    110 and queues: from then on the queue is held. Jobs 2 and 3 (1 core each) would fit
    the core left, but none may pass: not 2 at its arrival (120), nor at its restart after
    a revocation (130; it then ends in the cloud), nor 3 at its re-queue (225), which
    starts after job 1, at 1500."""
    spec = PoolSpec(1, 4.0, 16.0, "best-fit", "fcfs", False)
    sub = np.array([0.0, 10.0, 120.0, 125.0])
    rt = np.array([1000.0, 500.0, 50.0, 1000.0])
    cpu = np.array([3.0, 4.0, 1.0, 1.0])
    mem = np.ones(4)
    no = np.zeros(4, bool)
    answers: list[tuple[int, bool]] = []
    rule = pool._EventPool.may_pass

    def spy(self, j):
        answers.append((j, rule(self, j)))
        return answers[-1][1]

    def revocation(j, at):
        return 130.0 if (j, at) == (2, 120.0) else np.inf

    with mock.patch.object(pool._EventPool, "may_pass", spy):
        run = pool._general(spec, WaitingPolicy("ljw-spec", 0.0, 100.0), sub, rt, cpu, mem,
                            np.ones(4, bool), no, no, no, rt, revocation=revocation)
    # arrivals 0 and 1, 1's re-queue (an empty queue), then 2's arrival, 3's arrival, 2's
    # restart and 3's re-queue behind job 1
    assert answers == [(0, True), (1, True), (1, True), (2, False), (3, False), (2, False),
                       (3, False)]
    assert run.speculations == [(1, 10.0, 110.0, "killed"), (2, 120.0, 130.0, "revoked"),
                                (3, 125.0, 225.0, "killed"), (2, 130.0, 180.0, "done")]
    assert run.cloud.tolist() == [False, False, True, False]
    assert run.start.tolist() == [0.0, 1000.0, 130.0, 1500.0]
    assert run.wait.tolist() == [0.0, 990.0, 10.0, 1375.0]
    assert run.server.tolist() == [0, 0, -1, 0]
