"""Stratus's bin index lives across ticks (packers.binning, ``BinIndex.sync``) and instance
clearing looks only at the instances that changed (scalers.clearing, ``_watched``). Both
are checked against what they replace, at every tick of random replays: the index equals
a new index of the same instances, list for list, and clearing's candidates are the full
scan's. Replays cover estimates that run short (readjusted, rising forms) and long,
migrations, spot revocations, crashes, insufficient capacity, reserved instances,
anti-affinity and no readjustment."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_scheduler
from stratus.packers.binning import BinIndex, RuntimeBinPacker
from stratus.policy.estimators import NoisyEstimator
from stratus.policy.history import HistoryEstimator
from stratus.replays import engine
from stratus.scalers.clearing import InstanceClearing
from stratus.sim.config import ReplayConfig
from stratus.sim.faults import Faults
from tests.helpers.strategies import configs, workloads

pytestmark = pytest.mark.usefixtures("no_integer_bound")


def shape(idx: BinIndex) -> tuple:
    """Everything an answer of the index depends on (the bins' bounds are upper bounds,
    made exact when first searched in a tick: they prune and never change an answer)."""
    entries = {iid: (e.inst.iid, e.free, e.kind, e.a, e.d, e.s, e.key, e.bin, e.avail,
                     e.ready) for iid, e in idx.entries.items()}
    bins = {b: (tuple(map(tuple, bn.by_key)), tuple(bn.by_avail))
            for b, bn in idx.bins.items()}
    return entries, bins, tuple(idx._bin_ids)


class CheckedPacker(RuntimeBinPacker):
    """Runtime binning that compares its live index with a new one at each tick."""

    def __init__(self) -> None:
        super().__init__()
        self.ticks = self.synced = 0

    def index(self, view, plan):
        fresh_plan = self._index_plan is not plan
        live = self._index is not None and self._changed is not None
        idx = super().index(view, plan)
        if fresh_plan:
            self.ticks += 1
            self.synced += live
            bl = plan.cordoned
            insts = [i for i in view.instances if i.iid not in bl]
            assert shape(idx) == shape(BinIndex(view, plan, insts, self.unit_s))
            for b in idx.bins.values():  # the bound is one: at least every free amount
                for e in (idx.entries[i] for _, _, i in b.by_avail):
                    assert all(f <= u for f, u in zip(e.free, b.bound))
        return idx


class CheckedClearing(InstanceClearing):
    """Clearing whose watched candidates are compared with the full scan's each tick."""

    def _watched(self, view, plan):
        got = super()._watched(view, plan)
        want = self._scan(view, plan)
        assert sorted(i.iid for i in got) == sorted(i.iid for i in want)
        return got


def checked_stratus():
    sched = make_scheduler("stratus")
    packer = CheckedPacker()
    old = sched.migrator
    sched.packer = packer
    sched.migrator = CheckedClearing(packer, old.threshold, old.ticks)
    return sched


faults = st.one_of(st.none(), st.builds(
    Faults, crash_per_hour=st.sampled_from([0.0, 0.5, 2.0]),
    ice_prob=st.sampled_from([0.0, 0.3]), ice_window_s=st.sampled_from([0.0, 300.0])))


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(trace=workloads(max_jobs=10, max_tasks=6), conf=configs,
       h=st.sampled_from([None, 0.3, 2.0]), market=st.sampled_from(["spot", "on-demand"]),
       readjust=st.booleans(), faults=faults,
       reserved=st.sampled_from([(), (("m4.xlarge", 1),)]))
def test_the_live_index_and_watched_clearing_equal_a_rebuild_at_every_tick(
        trace, conf, h, market, readjust, faults, reserved):
    sched = checked_stratus()
    est = None if h is None else NoisyEstimator(h, seed=conf["seed"])
    res = engine(trace, sched, ReplayConfig(market=market, readjust=readjust, faults=faults,
                                            reserved=reserved, estimator=est, **conf)).run()
    assert res.summary["tasks"] == len(trace.frame)


def test_the_live_index_is_used_and_checked_on_a_day():
    """A synthetic day (migrations, overdue tasks, thousands of index changes): the index
    is synced, not rebuilt, after the first tick, and equals a rebuild at every tick."""
    from stratus.traces.synthetic import generate

    trace = generate("google", hours=6, scale=0.1, seed=3)
    sched = checked_stratus()
    res = engine(trace, sched, ReplayConfig(seed=3, estimator=HistoryEstimator())).run()
    assert sched.packer.synced == sched.packer.ticks - 1 > 10
    assert res.summary["migrations"] > 0
