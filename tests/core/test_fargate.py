"""Fargate (§4.3) as a cost model: hand-computed bills, rounding up to a 2018 task size,
tasks larger than any size, and its place among the scheduler names."""

from __future__ import annotations

import json

import pytest

from stratus.app.cli import main
from stratus.app.registry import all_names, get_spec, make_scheduler, scheduler_names
from stratus.base.errors import ConfigError
from stratus.fargate import SIZES, FargateCostModel
from stratus.sim.engine import ReplayConfig
from tests.helpers.trace import make_trace


def replay(trace, name, cfg):
    assert name == "fargate"
    return get_spec(name).factory().replay(trace, cfg)


def bill(cpu, mem, runtime=3600.0):
    res = replay(make_trace([(1, 0, 0.0, runtime, cpu, mem)]), "fargate", ReplayConfig())
    return res


def test_size_table_is_2018s():
    assert len(SIZES) == 3 + 4 + 7 + 13 + 23
    assert min(SIZES) == (0.25, 0.5) and max(SIZES) == (4.0, 30.0)
    assert {c for c, _ in SIZES} == {0.25, 0.5, 1.0, 2.0, 4.0}


def test_a_task_that_is_a_size_is_billed_its_request():
    res = bill(1.0, 2.0)
    assert res["total_cost_usd"] == pytest.approx(0.0506 + 2 * 0.0127)
    assert res["utilization"]["cpu"] == pytest.approx(1.0)
    assert res["instances_acquired"] == 0 and res["instance_hours"] is None


@pytest.mark.parametrize("cpu, mem, vcpu, gb", [
    (0.3, 0.6, 0.5, 1),    # both up: 0.5 vCPU with at least 1 GB
    (0.25, 3.0, 0.5, 3),   # 0.25 vCPU stops at 2 GB: memory forces 0.5 vCPU
    (2.0, 1.0, 2, 4),      # 2 vCPU comes with at least 4 GB
    (1.1, 8.5, 2, 9),      # 1 vCPU stops at 8 GB
])
def test_a_task_is_rounded_up_to_the_cheapest_size_that_holds_it(cpu, mem, vcpu, gb):
    res = bill(cpu, mem, runtime=1800.0)
    assert res["total_cost_usd"] == pytest.approx((vcpu * 0.0506 + gb * 0.0127) / 2)
    assert res.tasks["fargate_vcpu"][0] == vcpu and res.tasks["fargate_gb"][0] == gb


def test_a_task_larger_than_every_size_is_billed_as_equal_shares():
    res = bill(8.0, 16.0)  # two shares of 4 vCPU / 8 GB
    assert res["total_cost_usd"] == pytest.approx(2 * (4 * 0.0506 + 8 * 0.0127))
    assert res["fargate_tasks_split"] == 1
    res = bill(1.0, 64.0)  # three shares of 1/3 vCPU and 21.3 GiB: 4 vCPU / 22 GB each
    assert res["total_cost_usd"] == pytest.approx(3 * (4 * 0.0506 + 22 * 0.0127))


def test_tasks_start_at_submit_and_latency_is_the_jobs_own():
    tr = make_trace([(1, 0, 0.0, 100.0, 1.0, 2.0), (1, 1, 10.0, 50.0, 1.0, 2.0),
                     (2, 0, 30.0, 100.0, 0.25, 0.5), (2, 1, 80.0, 100.0, 0.25, 0.5)])
    res = replay(tr, "fargate", ReplayConfig())
    assert list(res.jobs["normalized_latency"]) == [1.0, 1.5]
    assert res["total_cost_usd"] == pytest.approx(
        (150 * (0.0506 + 2 * 0.0127) + 200 * (0.25 * 0.0506 + 0.5 * 0.0127)) / 3600)
    # the instance bounds are over the same run intervals (no wait): for reference
    assert 0 < res["lower_bound_cost_usd"] <= res["lower_bound_integer_usd"]


def test_fargate_is_a_name_but_not_an_engine_policy():
    assert "fargate" in all_names() and "fargate" not in scheduler_names()
    assert get_spec("fargate").kind == "cost-model"
    assert isinstance(get_spec("fargate").factory(), FargateCostModel)
    with pytest.raises(ConfigError, match="cost model"):
        make_scheduler("fargate")


@pytest.mark.slow
def test_fargate_on_the_command_line(capsys):
    args = ["--trace", "synthetic:google?scale=0.05", "--hours", "2", "--seed", "1", "--json"]
    assert main(["replay", *args, "--scheduler", "fargate"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert main(["compare", *args, "--schedulers", "task-per-instance,fargate",
                 "--jobs", "1"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["scheduler"] for r in runs] == ["task-per-instance", "fargate"]
    assert set(runs[0]) - set(runs[1]) == set()  # every key a policy reports
    for k in ("wall_seconds", "normalized_cost", "normalized_by", "cost_over_bound",
              "bound_used"):
        one.pop(k, None), runs[1].pop(k, None)  # compare adds the last four
    assert one == runs[1]
    assert runs[1]["total_cost_usd"] > runs[0]["total_cost_usd"]  # §4.3: much dearer
    assert main(["replay", *args[:-1], "--scheduler", "fargate"]) == 0
    assert "integer lower bound" in capsys.readouterr().out
