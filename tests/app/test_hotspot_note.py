"""The report's line on HSpot beside task-per-instance (issue 36): where HSpot made no hop,
the report says they are one baseline instead of showing two as if they differed."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from stratus.app.figures import replay_figures
from stratus.app.hotspot_note import hotspot_line


def _rows(cells):
    """Sweep rows as a report reads them: (scheduler, slice, cost, hops or None[, weighed])."""
    out = []
    for name, k, cost, hops, *weighed in cells:
        summary = {"total_cost_usd": cost} | ({} if hops is None else {"hops": hops})
        summary |= {"hops_weighed": weighed[0]} if weighed else {}
        out.append({"command": "replay", "opt_scheduler": name, "opt_market": "spot",
                    "trace_label": "Google-like", "trace": "synthetic:google?scale=0.002",
                    "hours": 1.0, "slice": k, "seed": 1, "code_version": "test",
                    "total_cost_usd": cost, "utilization_constraining": 0.5,
                    "latency_p50": 1.0, "latency_p95": 2.0, "instances_acquired": 3,
                    "instances_cleared": 0, "result_json": json.dumps(summary)})
    return pd.DataFrame(out)


def _fig4(cells):
    return next(f for f in replay_figures(_rows(cells)) if f.name == "fig4-cost")


def test_no_hop_and_the_same_bill_is_said_to_be_one_baseline():
    fig = _fig4([("hotspot", 0, 10.0, 0, 0), ("task-per-instance", 0, 10.0, None),
                 ("hotspot", 1, 12.5, 0, 0), ("task-per-instance", 1, 12.5, None),
                 ("stratus", 0, 8.0, None), ("stratus", 1, 9.0, None)])
    assert len(fig.notes) == 1
    note = fig.notes[0]
    assert note.startswith("Google-like: HSpot equals task-per-instance here: in every one "
                           "of 2 windows HSpot made no hop (no type a running task fits was "
                           "ever cheaper per hour than the one it ran on)")
    assert note.endswith("one baseline, not two.")
    assert "HSpot equals task-per-instance" in fig.caption
    # a cheaper type came, but no move paid: the line says that instead
    fig = _fig4([("hotspot", 0, 10.0, 0, 7), ("task-per-instance", 0, 10.0, None)])
    assert "HSpot equals task-per-instance here: in its one window" in fig.notes[0]
    assert "a cheaper type was weighed 7 times, but its saving" in fig.notes[0]


def test_hops_or_a_different_bill_are_not_called_equal():
    hopped = _fig4([("hotspot", 0, 9.0, 4), ("task-per-instance", 0, 10.0, None),
                    ("hotspot", 1, 12.5, 0), ("task-per-instance", 1, 12.5, None)])
    assert hopped.notes == ["Google-like: HSpot hopped 4 times, in 1 of 2 windows; its cost "
                            "minus task-per-instance's: -0.50 $ a window on average (the "
                            "difference also holds its bid: task-per-instance is revoked in "
                            "a spike, HSpot is not)."]
    # no hop, but a spike revoked task-per-instance in one window: the bid, not a hop
    line = hotspot_line([(0, 0, 10.0, 10.0), (0, 0, 11.0, 11.5)])
    assert "made no hop in 2 windows" in line and "in 1 of 2 windows" in line
    assert "equals" not in line


def test_no_line_without_both_schedulers_or_a_hop_count():
    assert _fig4([("hotspot", 0, 10.0, 0), ("stratus", 0, 8.0, None)]).notes == []
    assert _fig4([("hotspot", 0, 10.0, None),
                  ("task-per-instance", 0, 10.0, None)]).notes == []


@pytest.mark.slow
@pytest.mark.usefixtures("no_integer_bound")  # the bound has its own tests (conftest)
def test_compare_says_it_on_a_real_replay_of_the_bundled_prices(capsys):
    """End to end: on the bundled spot prices no m4 type a task fits gets cheaper than its
    own in this hour, so HSpot makes no hop; compare's document and table say so."""
    from stratus.app.cli import main

    assert main(["compare", "--trace", "synthetic:google?scale=0.002", "--hours", "1",
                 "--schedulers", "hotspot,task-per-instance", "--seed", "1", "--jobs", "1",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    hs, tpi = doc["runs"]
    assert hs["hops"] == 0 and hs["total_cost_usd"] == tpi["total_cost_usd"]
    assert hs["hops_weighed"] == 0
    assert doc["notes"][0].startswith("HSpot equals task-per-instance here: in its one window "
                                      "HSpot made no hop (no type a running task fits was "
                                      "ever cheaper")
