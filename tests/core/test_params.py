"""A scheduler's parts take parameters (issue 21, item 2): sklearn-style get_params and
set_params, ``NAME?KEY.NAME=VALUE&...`` wherever a scheduler is named, dotted keys in a
sweep's grid; checked before anything runs, one canonical name per set of values."""

from __future__ import annotations

import json

import pytest

from stratus.app.cli import main
from stratus.app.registry import get_spec, make_scheduler
from stratus.base.errors import ConfigError


def test_stratus_exposes_clearings_threshold_and_patience():
    p = make_scheduler("stratus").get_params()
    assert p["clearing.threshold"] == 0.5 and p["clearing.ticks"] == 3  # §3.4
    s = make_scheduler("stratus").set_params(**{"clearing.threshold": "0.4",
                                                "clearing.ticks": 5})
    assert s.migrator.threshold == 0.4 and s.migrator.ticks == 5
    assert isinstance(s.migrator.ticks, int)
    # the ablation chain's clearing takes the same parameters
    assert "clearing.threshold" in make_scheduler("scloud+pack+scale+clear").get_params()


@pytest.mark.parametrize("name, needle", [
    ("stratus?clearing.threshold=1.4", "a utilization in (0, 1]"),
    ("stratus?clearing.threshold=0", "a utilization in (0, 1]"),
    ("stratus?clearing.ticks=-1", "ticks >= 0"),
    ("stratus?clearing.ticks=1.5", "a whole number"),
    ("stratus?clearing.threshold=x", "takes a number"),
    ("stratus?clearing.threshold=nan", "a finite number"),
    ("stratus?clearing.nope=1", "not a parameter (known: threshold, ticks)"),
    ("stratus?nope.x=1", "no parameter 'nope.x'"),
    ("stratus?clearing.threshold", "KEY.NAME=VALUE"),
    ("stratus?clearing.threshold=0.4&clearing.threshold=0.3", "given twice"),
    ("fargate?a.b=1", "a cost model"),
    ("nosuch?a.b=1", "unknown scheduler 'nosuch'"),
])
def test_a_bad_parameter_is_one_line_before_anything_runs(capsys, name, needle):
    with pytest.raises(ConfigError, match=None) as exc:
        get_spec(name)
    assert needle in str(exc.value)
    assert main(["replay", "--trace", "synthetic:google?scale=0.01", "--hours", "1",
                 "--scheduler", name]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_one_set_of_values_has_one_name():
    assert get_spec("stratus?clearing.threshold=0.40").name == "stratus?clearing.threshold=0.4"
    assert get_spec("stratus?clearing.ticks=5&clearing.threshold=.4").name == \
        get_spec("stratus?clearing.threshold=0.4&clearing.ticks=5").name
    assert get_spec("stratus?clearing.threshold=0.5").name == "stratus"  # the default
    spec = get_spec("stratus?clearing.threshold=0.4")
    assert spec.estimator == "history"  # the registered scheduler's own
    sched = spec.factory()
    assert sched.name == spec.name and sched.migrator.threshold == 0.4


@pytest.mark.slow
@pytest.mark.usefixtures("one_spawner_at_a_time")  # --jobs 2
def test_parameters_change_the_replay_and_travel_to_worker_processes(capsys):
    names = "stratus,stratus?clearing.threshold=0.8&clearing.ticks=0"
    argv = ["compare", "--trace", "synthetic:google?scale=0.05", "--hours", "4",
            "--market", "on-demand", "--schedulers", names, "--json"]
    assert main([*argv, "--jobs", "2"]) == 0
    runs = {r["scheduler"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    base, eager = runs["stratus"], runs["stratus?clearing.threshold=0.8&clearing.ticks=0"]
    assert eager["instances_cleared"] > base["instances_cleared"]
    assert main([*argv, "--jobs", "1"]) == 0  # in this process: the same numbers
    again = {r["scheduler"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    for n, r in runs.items():
        assert again[n]["total_cost_usd"] == r["total_cost_usd"]


@pytest.mark.slow
def test_a_sweep_varies_clearings_threshold_from_its_toml(tmp_path, capsys):
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f"""
command = "replay"
results = "{tmp_path / 'res'}"
[[traces]]
label = "g"
spec = "synthetic:google?scale=0.05"
hours = 4
seeds = [0]
[[grid]]
scheduler = ["stratus"]
clearing.threshold = [0.4, 0.8]
[options]
market = "on-demand"
"clearing.ticks" = 0
""")
    assert main(["sweep", str(cfg), "--workers", "1", "--json"]) == 0
    capsys.readouterr()
    from stratus.app.sweep_store import read_rows

    rows = read_rows(tmp_path / "res")
    names = sorted(json.loads(j)["scheduler"] for j in rows["spec_json"])
    assert names == ["stratus?clearing.threshold=0.4&clearing.ticks=0",
                     "stratus?clearing.threshold=0.8&clearing.ticks=0"]
    by = {json.loads(j)["scheduler"]: json.loads(r)
          for j, r in zip(rows["spec_json"], rows["result_json"])}
    # each row is the direct replay of its named scheduler
    for name, doc in by.items():
        assert main(["replay", "--trace", "synthetic:google?scale=0.05", "--hours", "4",
                     "--seed", "0", "--market", "on-demand", "--scheduler", name,
                     "--json"]) == 0
        direct = json.loads(capsys.readouterr().out)
        assert direct["total_cost_usd"] == doc["total_cost_usd"], name
    assert len({d["total_cost_usd"] for d in by.values()}) == 2
