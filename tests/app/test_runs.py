"""compare --jobs: worker processes give a serial run's numbers, in the requested order, and
their errors as one line; --warmup-hours auto: the window's length within [1, 24] hours."""

from __future__ import annotations

import json

import pytest

from stratus.app.cli import main
from stratus.app.registry import SCHEDULERS, SchedulerSpec, scheduler_names
from stratus.base.errors import ConfigError, DecisionError
from stratus.traces.spec import warmup_hours

SMALL = ["--trace", "synthetic:google?scale=0.05", "--hours", "2", "--seed", "1"]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _without_wall(doc: dict) -> dict:
    for r in doc["runs"]:
        r.pop("wall_seconds")
    return doc


@pytest.mark.slow
@pytest.mark.usefixtures("one_spawner_at_a_time")  # --jobs 2
def test_parallel_compare_equals_serial_in_requested_order(capsys):
    names = list(reversed(scheduler_names()))  # not the registry's order
    argv = ["compare", *SMALL, "--schedulers", ",".join(names), "--json"]
    code1, out1, err1 = run_cli(capsys, *argv, "--jobs", "1")
    code2, out2, err2 = run_cli(capsys, *argv, "--jobs", "2")
    assert code1 == code2 == 0
    serial, parallel = _without_wall(json.loads(out1)), _without_wall(json.loads(out2))
    assert [r["scheduler"] for r in parallel["runs"]] == names
    assert parallel == serial
    assert err2 == err1  # workers add nothing to stderr (not a terminal: no progress either)


def _broken_factory():
    raise DecisionError("broken on purpose")


@pytest.mark.slow
@pytest.mark.usefixtures("one_spawner_at_a_time")  # --jobs 2
def test_a_worker_error_is_one_line(capsys, monkeypatch):
    scheduler_names()  # builtins first: the registry loads them only when it is empty
    monkeypatch.setitem(SCHEDULERS, "broken", SchedulerSpec("broken", _broken_factory, "test"))
    code, out, err = run_cli(capsys, "compare", *SMALL, "--schedulers", "first-fit,broken",
                             "--jobs", "2", "--json")
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == "stratus: error: broken on purpose" and "Traceback" not in err


def test_a_scheduler_that_cannot_travel_asks_for_jobs_1(capsys, monkeypatch):
    scheduler_names()
    monkeypatch.setitem(SCHEDULERS, "local", SchedulerSpec("local", lambda: None, "test"))
    code, out, err = run_cli(capsys, "compare", *SMALL, "--schedulers", "first-fit,local",
                             "--jobs", "2", "--json")
    assert code == 2 and out == "" and "use --jobs 1" in err.splitlines()[-1]


@pytest.mark.parametrize("arg, window, want", [
    ("auto", 0.25, 1.0), ("auto", 6.0, 6.0), ("auto", 48.0, 24.0), (None, 2.0, 2.0),
    ("24", 1.0, 24.0), ("0", 6.0, 0.0), ("1.5", 48.0, 1.5),
])
def test_warmup_hours_rule(arg, window, want):
    assert warmup_hours(arg, window) == want


def test_warmup_hours_refuses_words():
    with pytest.raises(ConfigError, match=r"--warmup-hours takes a number of hours in \[0, 87600\] or 'auto'"):
        warmup_hours("a day", 6.0)


@pytest.mark.slow
def test_auto_warmup_follows_the_window_and_a_number_is_kept(capsys):
    argv = ["replay", *SMALL, "--scheduler", "stratus", "--json"]
    auto = json.loads(run_cli(capsys, *argv)[1])
    day = json.loads(run_cli(capsys, *argv, "--warmup-hours", "24")[1])
    assert auto["estimator_warmup_hours"] == 2.0 and day["estimator_warmup_hours"] == 24.0
    assert 0 < auto["estimator_warmup_jobs"] < day["estimator_warmup_jobs"]
    none = json.loads(run_cli(capsys, *argv, "--warmup-hours", "0")[1])
    assert none["estimator_warmup_jobs"] == 0
