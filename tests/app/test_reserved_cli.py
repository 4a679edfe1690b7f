"""``--reserved`` and ``--reserved-discount`` on the command line, in the specs and the
API (issue 23 item 1; the engine's side: tests/core/test_reserved.py)."""

from __future__ import annotations

import json
import math

import pytest

import stratus
from stratus.app import spec as S
from stratus.app.cli import main
from stratus.base.errors import ConfigError
from stratus.commitments.reserved import reserved_rate
from stratus.pricing.catalog import M4

TRACE = "synthetic:google?scale=0.02&hours=2"


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("command", ["replay", "compare"])
@pytest.mark.parametrize("option, message", [
    (["--reserved", "m4.huge:1"], "--reserved: unknown instance type 'm4.huge'"),
    (["--reserved", "m4.large:0"], "--reserved: 'm4.large:0': the count must be from 1"),
    (["--reserved", "m4.large"], "--reserved: 'm4.large' is not TYPE:COUNT"),
    (["--reserved", "m4.large:two"], "--reserved: 'm4.large:two': the count must be a whole"),
    (["--reserved", "m4.large:1,m4.large:1"], "--reserved: type 'm4.large' given twice"),
    (["--reserved-discount", "1"], "--reserved-discount takes a fraction >= 0 and < 1"),
    (["--reserved-discount", "-0.5"], "--reserved-discount takes a fraction >= 0 and < 1"),
    (["--reserved-discount", "half"], "--reserved-discount takes a fraction >= 0 and < 1"),
])
def test_bad_reserved_options_are_one_line_exit_2(capsys, command, option, message):
    code, out, err = run_cli(capsys, command, "--trace", TRACE, *option, "--json")
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err


@pytest.mark.parametrize("argv", [
    ["compare", "--schedulers", "stratus,fargate"],
    ["replay", "--scheduler", "fargate"],
    ["advise", "--commit", "reserved", "--scheduler", "fargate"],
])
def test_a_cost_model_beside_reserved_instances_is_refused(capsys, argv):
    """Issue 36: `compare ... --reserved m4.16xlarge:8` billed Fargate $3.45 beside
    Stratus's $35.55 with the commitment: Fargate paid none of it."""
    extra = [] if "advise" in argv else ["--reserved", "m4.16xlarge:8"]
    code, out, err = run_cli(capsys, *argv, "--trace", TRACE, *extra, "--json")
    assert code == 2 and out == "", (code, out, err)
    assert err.count("\n") == 1 and "cannot be combined with the cost model fargate" in err


def test_a_sweep_of_a_cost_model_and_reserved_instances_is_refused_before_it_runs(
        tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"""command = "replay"
results = "{tmp_path / 'res'}"
[[traces]]
label = "t"
spec = "{TRACE}"
[[grid]]
scheduler = ["stratus", "fargate"]
reserved = ["m4.large:1"]
""")
    code, out, err = run_cli(capsys, "sweep", cfg)
    assert code == 2 and "reserved" in err and "fargate" in err and err.count("\n") == 1
    assert not (tmp_path / "res").exists()


def test_a_replay_with_a_reserved_instance_reports_and_bills_it(capsys):
    args = ["replay", "--trace", TRACE, "--scheduler", "first-fit", "--market", "on-demand",
            "--reserved", "m4.10xlarge:1", "--no-progress"]
    code, out, err = run_cli(capsys, *args, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["reserved"] == "m4.10xlarge:1" and doc["reserved_instances"] == 1
    assert doc["instances_acquired"] >= 1
    rate = reserved_rate(M4["m4.10xlarge"], None)
    horizon_h = doc["reserved_cost_usd"] / rate
    assert doc["cost_by_market"]["reserved"] == doc["reserved_cost_usd"] > 0
    assert doc["total_cost_usd"] >= doc["reserved_cost_usd"]
    # the horizon runs from the first tick to the end: about the simulated time
    assert math.isclose(horizon_h, doc["simulated_hours"], abs_tol=1 / 60 + 1e-3)
    code, table, _ = run_cli(capsys, *args)
    assert code == 0 and "reserved (in acquired)" in table and "m4.10xlarge:1" in table


def test_the_discount_sets_the_rate(capsys):
    base = ["replay", "--trace", TRACE, "--scheduler", "stratus", "--reserved", "m4.large:2",
            "--no-progress", "--json"]
    a = json.loads(run_cli(capsys, *base)[1])
    b = json.loads(run_cli(capsys, *base, "--reserved-discount", "0.2")[1])
    # 0.4 x on-demand (no catalog rate in m4) against 0.8 x on-demand, same horizon
    assert math.isclose(b["reserved_cost_usd"], 2 * a["reserved_cost_usd"], rel_tol=1e-3)


def test_compare_gives_every_scheduler_the_reserved_instances(capsys):
    code, out, err = run_cli(capsys, "compare", "--trace", TRACE, "--schedulers",
                             "task-per-instance,hotspot,stratus", "--reserved",
                             "m4.4xlarge:1", "--jobs", "1", "--no-progress", "--json")
    assert code == 0, err
    doc = json.loads(out)
    rows = doc["runs"]
    assert len(rows) == 3
    for s in rows:
        assert s["reserved_instances"] == 1 and s["cost_by_market"]["reserved"] > 0


def test_the_spec_takes_the_option_in_one_canonical_form():
    a = S.ReplaySpec(trace=TRACE, reserved=" m4.large:1 , m4.xlarge:2")
    b = S.ReplaySpec(trace=TRACE, reserved=["m4.large:1", "m4.xlarge:2"])
    assert a.reserved == b.reserved == "m4.large:1,m4.xlarge:2"
    assert a.canonical() == b.canonical()
    assert S.ReplaySpec(trace=TRACE, reserved="").reserved is None
    with pytest.raises(ConfigError, match=r"^reserved: unknown instance type 'm5.large'"):
        S.ReplaySpec(trace=TRACE, reserved="m5.large:1")
    # the types are the catalog's
    assert S.ReplaySpec(trace=TRACE, catalog="m5", reserved="m5.large:1").reserved == \
        "m5.large:1"


def test_the_api_replays_with_reserved_instances():
    res = stratus.replay(TRACE, "task-per-instance", reserved="m4.2xlarge:1",
                         reserved_discount=0.5)
    assert res.summary["reserved_instances"] == 1
    assert "reserved" in set(res.instances["market"])


def test_the_table_says_what_ran_where_beside_the_gates_split(capsys):
    """Issue 36, item 4: LJW with a huge t turns every task away; with share=on the
    scheduler still runs many on the reserved instance. The table gives both counts, as
    the summary does."""
    args = ["replay", "--trace", TRACE, "--scheduler", "first-fit", "--market", "on-demand",
            "--reserved", "m4.10xlarge:1", "--waiting", "ljw:t=1e9", "--no-progress"]
    code, out, err = run_cli(capsys, *args, "--json")
    assert code == 0, err
    s = json.loads(out)
    w = s["waiting"]
    assert w["gate_turned_away"] == s["tasks"] and w["gate_turned_away_fraction"] == 1.0
    assert w["turned_away_ran_on_reserved"] > 0 and s["ran_on_cloud_fraction"] < 1.0
    code, table, _ = run_cli(capsys, *args)
    assert code == 0
    assert (f"{s['tasks_ran_on_reserved']:,} / {s['tasks_ran_on_cloud']:,} / "
            f"{s['tasks_ran_on_both']:,}") in table
    assert (f"turned away {w['gate_turned_away']:,} (100.0%; "
            f"{w['turned_away_ran_on_reserved']:,} of them ran on reserved") in table
