"""The issue-36 breakdown (benchmarks/windows_gap_analysis.py) on a hand-made replay: the
bill's parts sum to the bill, and an instance kept low by a task past its estimate is
billed to ``low_overrun``, one whose task is still within it to ``low_within``."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from stratus.policy.compose import Plan
from stratus.pricing.catalog import M4
from stratus.replays import replay
from stratus.sim.engine import ReplayConfig
from stratus.sim.estimate import Estimator
from tests.helpers.paths import ROOT
from tests.helpers.trace import make_trace


@pytest.fixture(scope="module")
def gap():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(
            "windows_gap_analysis", ROOT / "benchmarks" / "windows_gap_analysis.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return mod


class _Fixed(Estimator):
    name = "fixed"

    def __init__(self, seconds):
        self.seconds = seconds

    def predict(self, tasks):
        return [self.seconds] * len(tasks)


class _Together:
    """Both tasks on one m4.xlarge at the first tick."""

    name = "together"

    def schedule(self, view):
        plan = Plan(view)
        if view.pending:
            plan.acquire(M4["m4.xlarge"], view.pending)
        return plan.decisions


def _run(estimate):
    # a long 1-vCPU task and a short 2-vCPU one: after the short one ends (at 140) the
    # instance is at 1/4 of its CPU and 1/16 of its memory, low, kept alive by the long one
    tr = make_trace([(1, 0, 0.0, 1000.0, 1.0, 1.0), (2, 0, 0.0, 100.0, 2.0, 1.0)])
    cfg = ReplayConfig(spinup_s=(40.0, 40.0), tick_s=60.0, record=True, market="on-demand",
                       estimator=_Fixed(estimate))
    return tr, replay(tr, _Together(), cfg)


@pytest.mark.parametrize("estimate", [50.0, 500.0, 5000.0])
def test_bill_by_cause_sums_and_names_the_overrun_tail(gap, estimate):
    tr, res = _run(estimate)
    out = gap.analyse(res, tr, M4)
    bill = out["bill_by_cause_usd"]
    assert sum(bill.values()) == pytest.approx(res["total_cost_usd"], rel=1e-9)
    rate = res.instances.cost_usd[0] / (res.instances.released_s[0]
                                        - res.instances.requested_s[0])
    assert bill["spinup"] == pytest.approx(40 * rate)
    assert bill["used"] == pytest.approx(rate * (1000 * 0.25 + 100 * 0.5))
    # low from 140 (the short task ends) to 1040; the long task passes its estimate at
    # 40 + estimate: idle (3/4 of the CPU) before that is within, after it an overrun
    over = max(0.0, 1040 - max(140.0, 40 + estimate))
    assert bill["low_overrun"] == pytest.approx(0.75 * rate * over)
    assert bill["low_within"] == pytest.approx(0.75 * rate * (900 - over))
    assert bill["packing"] == pytest.approx(0.25 * rate * 100)
    assert bill["empty"] == 0.0


def test_overrun_times_follow_progress_across_segments(gap):
    # task 0 runs 0-100 then 300-600 (a pause, as in a transfer); task 1 never passes
    segs = [(0, 1, 0.0, 100.0), (0, 2, 300.0, 600.0), (1, 1, 0.0, 50.0)]
    t = gap.overrun_times(segs, np.array([250.0, 60.0]))
    assert t[0] == pytest.approx(450.0) and t[1] == np.inf


def test_estimate_error_by_bin_counts_lower_and_higher_bins(gap):
    runtime = np.array([100.0, 100.0, 1000.0, 3.0])
    est = np.array([10.0, 120.0, 5000.0, 3.5])  # lower, same bin, higher, same bin
    out = gap.estimate_error_by_bin(runtime, est, np.ones(4), np.array([1, 1, 2, 3]),
                                    np.array([100.0, 200.0, 3800.0, 3900.0]))
    assert out["all"]["placed_lower"] == 0.25 and out["all"]["placed_higher"] == 0.25
    assert out["all"]["jobmean_lower"] == 0.0 and out["all"]["jobmean_higher"] == 0.0
    # job 1's mean, 100 s, is in its tasks' bin; a job of a 10 s and a 1000 s task is not
    uneven = gap.estimate_error_by_bin(np.array([10.0, 1000.0]), np.array([10.0, 1000.0]),
                                       np.array([1.0, 3.0]), np.array([1, 1]))
    assert uneven["all"]["jobmean_lower"] == 0.5 and uneven["all"]["jobmean_higher"] == 0.5
    assert uneven["all"]["jobmean_weight_lower"] == 0.75
    # the one task in a lower bin was submitted in the first hour, of two there
    assert [(h["hour"], h["tasks"], h["weight_lower"]) for h in out["by_hour"]] == \
        [(0, 2, 0.5), (1, 2, 0.0)]


def test_clearing_causes_by_the_tasks_moved(gap):
    t_over = np.array([10.0, np.inf, 15.0, 50.0])
    log = [(0, 7, 9, 20.0, 30.0), (2, 7, 9, 20.0, 30.0),  # both past: all
           (0, 8, 9, 20.0, 30.0), (1, 8, 9, 20.0, 30.0),  # one of two: some
           (3, 5, 9, 40.0, 45.0)]  # before it passed at 50: none
    out = gap.clearing_causes(log, t_over)
    assert out == {"instances": 3, "all_past_estimate": 1, "some_past_estimate": 1,
                   "none_past_estimate": 1}
