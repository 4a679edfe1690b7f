"""``--savings-plan USD_PER_HOUR[:DISCOUNT]`` on the command line, in the specs and the API
(issue 23 item 2; the engine's side: tests/core/test_savings_plan.py)."""

from __future__ import annotations

import json
import math

import pytest

import stratus
from stratus.app import spec as S
from stratus.app.cli import main
from stratus.base.errors import ConfigError
from stratus.commitments.savings import SavingsPlan

TRACE = "synthetic:google?scale=0.02"
PLAN_KEYS = ("savings_plan", "savings_plan_usd_per_hour", "savings_plan_discount",
             "savings_plan_commitment_usd", "savings_plan_covered_usd",
             "savings_plan_unused_usd")


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_replay_with_a_plan_reports_and_bills_it(capsys):
    args = ["replay", "--trace", TRACE, "--hours", "2", "--savings-plan", "5:0.3",
            "--no-progress"]
    code, out, err = run_cli(capsys, *args, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert all(k in doc for k in PLAN_KEYS)
    assert doc["savings_plan"] == "5:0.3" and doc["savings_plan_usd_per_hour"] == 5.0
    assert doc["savings_plan_discount"] == 0.3
    # $5/h over the horizon (first tick to the end: about the simulated time)
    horizon_h = doc["savings_plan_commitment_usd"] / 5.0
    assert math.isclose(horizon_h, doc["simulated_hours"], abs_tol=1 / 60 + 1e-3)
    assert doc["cost_by_market"]["savings-plan"] == doc["savings_plan_commitment_usd"]
    assert math.isclose(sum(doc["cost_by_market"].values()), doc["total_cost_usd"],
                        rel_tol=1e-9)
    # a plan this large covers every on-demand instance: Stratus rents them, nothing beyond
    assert doc["savings_plan_covered_usd"] > 0 and doc["cost_by_market"]["on-demand"] == 0
    assert math.isclose(doc["savings_plan_unused_usd"], doc["savings_plan_commitment_usd"]
                        - 0.7 * doc["savings_plan_covered_usd"], rel_tol=1e-8)
    assert doc["lower_bound_cost_usd"] <= doc["total_cost_usd"]
    code, table, _ = run_cli(capsys, *args)
    assert code == 0 and "savings plan ($/h:discount)" in table and "5:0.3" in table


def test_without_the_option_no_plan_keys(capsys):
    code, out, err = run_cli(capsys, "replay", "--trace", TRACE, "--hours", "1",
                             "--no-progress", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert not [k for k in doc if k.startswith("savings_plan")]
    assert "savings-plan" not in doc["cost_by_market"]


@pytest.mark.parametrize("command", ["replay", "compare", "sensitivity"])
@pytest.mark.parametrize("value, message", [
    ("abc", "--savings-plan takes USD_PER_HOUR[:DISCOUNT]"),
    ("-1", "--savings-plan: the commitment must be a number of $/hour > 0"),
    ("0", "--savings-plan: the commitment must be a number of $/hour > 0"),
    ("5:1", "--savings-plan: the discount must be a fraction in [0, 1)"),
    ("5:-0.2", "--savings-plan: the discount must be a fraction in [0, 1)"),
    ("5:half", "--savings-plan takes USD_PER_HOUR[:DISCOUNT]"),
])
def test_bad_values_are_one_line_exit_2(capsys, command, value, message):
    code, out, err = run_cli(capsys, command, "--trace", TRACE, "--hours", "1",
                             "--savings-plan", value, "--json")
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err


def test_compare_gives_every_scheduler_the_plan(capsys):
    code, out, err = run_cli(capsys, "compare", "--trace", TRACE, "--hours", "2",
                             "--schedulers", "task-per-instance,stratus,fargate",
                             "--savings-plan", "1", "--market", "on-demand", "--jobs", "1",
                             "--no-progress", "--json")
    assert code == 0, err
    runs = {r["scheduler"]: r for r in json.loads(out)["runs"]}
    for name in ("task-per-instance", "stratus"):
        assert runs[name]["savings_plan"] == "1:0.5"
        assert runs[name]["cost_by_market"]["savings-plan"] > 0
    # the cost model bills at its own prices and says so
    assert runs["fargate"]["savings_plan"] == "1:0.5"
    assert "not modelled" in runs["fargate"]["savings_plan_note"]


def test_the_spec_takes_the_option_in_one_canonical_form():
    forms = ["5", " 5:0.5 ", 5, 5.0, SavingsPlan(5.0)]
    specs = [S.ReplaySpec(trace=TRACE, savings_plan=f) for f in forms]
    assert {s.savings_plan for s in specs} == {"5:0.5"}
    assert len({json.dumps(s.canonical()) for s in specs}) == 1
    assert S.ReplaySpec(trace=TRACE, savings_plan="").savings_plan is None
    assert S.ReplaySpec(trace=TRACE).savings_plan is None
    with pytest.raises(ConfigError, match=r"^savings_plan: the discount must be"):
        S.ReplaySpec(trace=TRACE, savings_plan="5:2")
    # a sweep cell's options (CloudSpec.build with a config's label) take it too
    spec = S.CompareSpec.build({"trace": TRACE, "savings_plan": 2.5},
                               label=lambda n: f"sweep option {n!r}")
    assert spec.savings_plan == "2.5:0.5"
    with pytest.raises(ConfigError, match=r"^sweep option 'savings_plan' takes"):
        S.CompareSpec.build({"trace": TRACE, "savings_plan": "x"},
                            label=lambda n: f"sweep option {n!r}")


def test_the_api_replays_under_a_plan():
    res = stratus.replay(TRACE + "&hours=2", "first-fit", market="on-demand",
                         savings_plan="0.5:0.4")
    s = res.summary
    assert s["savings_plan_discount"] == 0.4 and s["savings_plan_usd_per_hour"] == 0.5
    # per-instance rows keep their on-demand cost; the bill is the plan's
    od = res.instances.loc[res.instances["market"] == "on-demand", "cost_usd"].sum()
    assert math.isclose(s["savings_plan_covered_usd"] + s["cost_by_market"]["on-demand"], od,
                        rel_tol=1e-8)
