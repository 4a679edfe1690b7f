"""The built-in catalog aws-2025-p3-c7i-r7i (Eva's artifact's types): shapes, a source on
every price, synthetic spot prices for every type, and GPU tasks of the Alibaba GPU trace
replayed on it, the 145-day pod included (the stall guard must tell it from a stall)."""

from __future__ import annotations

import numpy as np
import pytest

from stratus.app.registry import make_scheduler
from stratus.pricing.catalog_files import builtin_names, load_catalog
from stratus.pricing.synthetic_spot import synthetic_series
from stratus.replays import replay
from stratus.sim.engine import ReplayConfig
from stratus.traces.alibaba_gpu import load
from stratus.traces.schema import Trace
from tests.helpers.paths import FIXTURES

NAME = "aws-2025-p3-c7i-r7i"
SIZES = ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge",
         "24xlarge", "48xlarge")


@pytest.fixture(scope="module")
def cat():
    return load_catalog(NAME)


def test_types_shapes_and_gpus(cat):
    assert NAME in builtin_names()
    assert cat.has_gpus and cat.dims == ("cpu", "mem", "gpu")
    names = {t.name for t in cat}
    assert names == ({f"{f}.{s}" for f in ("c7i", "r7i") for s in SIZES}
                     | {"p3.2xlarge", "p3.8xlarge", "p3.16xlarge"})
    assert [(cat[n].vcpu, cat[n].mem_gib, cat[n].gpus) for n in
            ("p3.2xlarge", "p3.8xlarge", "p3.16xlarge")] == [(8, 61, 1), (32, 244, 4),
                                                            (64, 488, 8)]
    for fam, gib in (("c7i", 2), ("r7i", 8)):
        large = cat[f"{fam}.large"]
        for s in SIZES:
            t = cat[f"{fam}.{s}"]
            assert t.gpus == 0 and t.mem_gib == gib * t.vcpu
            # linear in size within a family, to the cent of a cent
            assert t.ondemand_hourly == pytest.approx(large.ondemand_hourly * t.vcpu / 2,
                                                      abs=1e-6)


def test_every_price_has_a_source_and_says_it_is_unchecked(cat):
    assert cat.region == "us-east-1" and cat.as_of == "2025"
    for t in cat:
        assert t.source and not t.verified, t.name
        assert "not checked against the AWS price list" in t.source, t.name


def test_synthetic_spot_prices_for_every_type(cat):
    series = synthetic_series(cat, days=2)
    assert set(series) == {t.name for t in cat}
    for t in cat:
        prices = series[t.name].prices
        # a spot market: positive prices, mostly below the type's on-demand price
        assert (prices > 0).all() and np.median(prices) < t.ondemand_hourly, t.name


def _pods(*numbers: int, **options) -> Trace:
    t = load(FIXTURES / "alibaba" / "openb_pod_list_default.csv", **options)
    f = t.frame[t.frame["job_id"].isin(numbers)].reset_index(drop=True)
    return Trace(f, name=t.name, meta=t.meta, validated=True)


@pytest.mark.slow
def test_gpu_pods_go_to_the_cheapest_fitting_p3():
    # 0039: 4 vCPU + 1 GPU -> p3.2xlarge; 2182: 32.2 vCPU + 4 GPUs -> too many vCPU for
    # p3.8xlarge -> p3.16xlarge; 0048: CPU only, 8 vCPU / 29.8 GiB -> r7i.2xlarge (0.5292
    # $/h; c7i.4xlarge, the other fit, costs 0.714)
    trace = _pods(39, 2182, 48)
    res = replay(trace, make_scheduler("task-per-instance"),
                 ReplayConfig(seed=1, catalog=load_catalog(NAME), market="on-demand"))
    s = res.summary
    assert s["tasks_completed"] == 3
    assert set(s["cost_by_type"]) == {"p3.2xlarge", "p3.16xlarge", "r7i.2xlarge"}


@pytest.mark.slow
def test_the_145_day_pod_ends_with_the_right_bill():
    # pod 0000 holds 12 vCPU, 16 GiB and one GPU for 12,537,496 s: longer than the stall
    # guard's 100,000 quiet ticks (69 days at 60 s), so the guard must see a long task.
    # (Stratus ends with the same bill too, but ticks every minute of the 145 days: ~50 s,
    # too long for the suite.)
    scheduler = "task-per-instance"
    trace = _pods(0, window_start_s="0")
    runtime = 12_537_496.0
    cfg = ReplayConfig(seed=1, catalog=load_catalog(NAME), market="on-demand")
    s = replay(trace, make_scheduler(scheduler), cfg).summary
    assert s["ended_early"] is None and s["tasks_completed"] == 1
    assert set(s["cost_by_type"]) == {"p3.8xlarge"}  # 12 vCPU: not a p3.2xlarge
    hours = s["instance_hours"]
    # billed from the request to the end: the runtime, plus spin-up and a tick at most
    assert runtime / 3600 < hours <= (runtime + 160 + 60) / 3600
    assert s["total_cost_usd"] == pytest.approx(12.24 * hours, rel=1e-6)


def test_karpenter_with_more_than_64_gpu_instances():
    # Regression: the first-fit index Karpenter's consolidation uses rebuilt its tree from
    # 2-D free vectors only; past 64 live instances on a GPU catalog (3-D vectors) the
    # rebuild raised "too many values to unpack" (the busy 34 days of the Alibaba trace).
    import pandas as pd

    n = 70  # 40 vCPU and a GPU each: only a p3.16xlarge fits, one task per instance
    frame = pd.DataFrame({"job_id": range(n), "task_id": 0, "submit_s": 0.0,
                          "runtime_s": 7200.0, "cpu": 40.0, "mem_gib": 64.0,
                          "user": "u", "job_name": "j", "priority": 0, "gpus": 1.0})
    cfg = ReplayConfig(seed=1, catalog=load_catalog(NAME), market="on-demand")
    s = replay(Trace(frame, name="wide"), make_scheduler("karpenter"), cfg).summary
    assert s["tasks_completed"] == n and s["instances_acquired"] >= n


@pytest.mark.parametrize("scheduler", ["stratus", "fleet"])
def test_two_shares_share_one_gpu_and_whole_gpus_do_not(tmp_path, scheduler):
    # pod 0038's row twice, asking 0.47 GPU each and submitted together: with gpu=share
    # both go on one p3.2xlarge (8 vCPU, 61 GiB, 1 GPU: 940 of its 1000 thousandths);
    # with gpu=whole each rents its own GPU, so two instances of the one GPU type offered
    row = "{},4000,22888,1,470,,BE,Running,9973579,9977179,9973579\n"
    pods = tmp_path / "openb_pod_list_default.csv"
    pods.write_text((FIXTURES / "alibaba" / "openb_pod_list_default.csv").read_text()
                    .splitlines(keepends=True)[0] + row.format("openb-pod-0038")
                    + row.format("openb-pod-0040"))
    cat = load_catalog(NAME).subset(["c7i.large", "p3.2xlarge"])
    got = {}
    for mode in ("share", "whole"):
        trace = load(pods, gpu=mode, window_start_s="0")
        assert trace.frame["gpus"].tolist() == ([0.47, 0.47] if mode == "share" else [1.0, 1.0])
        s = replay(trace, make_scheduler(scheduler),
                   ReplayConfig(seed=1, catalog=cat, market="on-demand")).summary
        assert s["tasks_completed"] == 2
        got[mode] = (s["instances_acquired"], set(s["cost_by_type"]))
    assert got == {"share": (1, {"p3.2xlarge"}), "whole": (2, {"p3.2xlarge"})}
