"""The engine's progress bar (rich): drawn on a terminal only, ended whatever ends a replay."""

from __future__ import annotations

import io

import pytest

from stratus.app import progress
from stratus.app.progress import ProgressBar
from stratus.app.registry import make_scheduler
from stratus.replays import replay
from stratus.sim.engine import ReplayConfig
from tests.helpers.trace import make_trace

SHOW_CURSOR = "\x1b[?25h"  # rich hides the cursor while a bar is drawn


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch):
    """rich reads these to overrule isatty(); the tests decide what is a terminal. And the
    width: rich takes it from COLUMNS when the environment has it, and squeezes a bar
    wider than that (at COLUMNS=30 the label "stratus" is cut to "st…")."""
    for name in ("TTY_COMPATIBLE", "FORCE_COLOR", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture
def no_delay(monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_drawn_off_a_terminal():
    out = io.StringIO()
    assert not ProgressBar.wanted(out)
    bar = ProgressBar("stratus", stream=out)
    for k in range(5):
        bar(k * 60.0, k, 4)
    bar.close()
    assert out.getvalue() == ""


def test_a_bar_on_a_terminal_ends_with_its_last_state_and_a_new_line(no_delay):
    out = Terminal()
    assert ProgressBar.wanted(out)
    bar = ProgressBar("stratus", stream=out, min_interval_s=3600.0)
    bar(0.0, 0, 100)
    bar(7200.0, 40, 100)  # inside min_interval_s: not drawn now...
    assert "40/100" not in out.getvalue()
    bar.close()  # ...but by close(), as a replay that stopped early leaves it
    text = out.getvalue()
    assert "stratus" in text and "40/100 tasks" in text and "2.00 h" in text
    assert text.replace(SHOW_CURSOR, "").endswith("\n") and text.endswith(SHOW_CURSOR)
    bar.close()  # closing twice draws nothing more
    bar(9000.0, 50, 100)
    assert out.getvalue() == text


def test_the_last_task_draws_and_ends_the_bar(no_delay):
    out = Terminal()
    bar = ProgressBar("fleet", stream=out, min_interval_s=3600.0)
    bar(0.0, 0, 3)
    bar(60.0, 3, 3)  # done: drawn whatever the interval
    text = out.getvalue()
    assert "3/3 tasks" in text and text.replace(SHOW_CURSOR, "").endswith("\n")
    bar(60.0, 3, 3)  # the engine's call after its loop
    assert out.getvalue() == text


def test_a_replay_over_within_the_delay_draws_no_bar(monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 3600.0)
    out = Terminal()
    bar = ProgressBar("stratus", stream=out)
    for k in range(4):
        bar(k * 60.0, k, 3)
    bar.close()
    assert out.getvalue() == ""


class Hook:
    def __init__(self) -> None:
        self.calls = self.closed = 0

    def __call__(self, sim_t: float, done: int, total: int) -> None:
        self.calls += 1

    def close(self) -> None:
        self.closed += 1


def test_the_engine_closes_its_progress_hook_once_when_a_replay_ends():
    tr = make_trace([(1, 0, 0.0, 300.0, 1.0, 2.0), (2, 0, 100.0, 600.0, 1.0, 2.0)])
    hook = Hook()
    replay(tr, make_scheduler("task-per-instance"), ReplayConfig(progress=hook))
    assert hook.calls > 0 and hook.closed == 1


class Boom:
    name = "boom"

    def schedule(self, view):
        raise RuntimeError("scheduler bug")


def test_the_engine_closes_its_progress_hook_when_a_replay_fails():
    tr = make_trace([(1, 0, 0.0, 300.0, 1.0, 2.0)])
    hook = Hook()
    with pytest.raises(RuntimeError, match="scheduler bug"):
        replay(tr, Boom(), ReplayConfig(progress=hook))
    assert hook.closed == 1


def test_a_plain_callable_is_still_a_progress_hook():
    seen = []
    tr = make_trace([(1, 0, 0.0, 300.0, 1.0, 2.0)])
    replay(tr, make_scheduler("task-per-instance"),
           ReplayConfig(progress=lambda t, d, n: seen.append((d, n))))
    assert seen and seen[-1] == (1, 1)
