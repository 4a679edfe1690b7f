"""--warmup-hours auto: the window's length within [1, 24] hours; a number as given."""

from __future__ import annotations

import json

import pytest

from stratus.cli import main
from stratus.errors import ConfigError
from traces.spec import warmup_hours

SMALL = ["--trace", "synthetic:google?scale=0.05", "--hours", "2", "--seed", "1"]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("arg, window, want", [
    ("auto", 0.25, 1.0), ("auto", 6.0, 6.0), ("auto", 48.0, 24.0), (None, 2.0, 2.0),
    ("24", 1.0, 24.0), ("0", 6.0, 0.0), ("1.5", 48.0, 1.5),
])
def test_warmup_hours_rule(arg, window, want):
    assert warmup_hours(arg, window) == want


def test_warmup_hours_refuses_words():
    with pytest.raises(ConfigError, match="--warmup-hours takes a number of hours or 'auto'"):
        warmup_hours("a day", 6.0)


def test_auto_warmup_follows_the_window_and_a_number_is_kept(capsys):
    argv = ["replay", *SMALL, "--scheduler", "stratus", "--json"]
    auto = json.loads(run_cli(capsys, *argv)[1])
    day = json.loads(run_cli(capsys, *argv, "--warmup-hours", "24")[1])
    assert auto["estimator_warmup_hours"] == 2.0 and day["estimator_warmup_hours"] == 24.0
    assert 0 < auto["estimator_warmup_jobs"] < day["estimator_warmup_jobs"]
    none = json.loads(run_cli(capsys, *argv, "--warmup-hours", "0")[1])
    assert none["estimator_warmup_jobs"] == 0
