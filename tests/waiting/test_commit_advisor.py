"""The commitment advisor over the unified replay (stratus.app.commit, issue 23 item 5) and
its fluid-model start (stratus.waiting.advisor.milp_mix, milp_commitment)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stratus.app.cli import main
from stratus.waiting.advisor import milp_commitment, milp_mix, unit_prices

pytest.importorskip("ortools")

CAPS = np.array([[2.0, 8.0], [8.0, 32.0]])
OD = np.array([0.1, 0.4])


def test_unit_prices_of_a_linear_family():
    a, b = unit_prices(CAPS, OD)
    assert a * 2 + b * 8 == pytest.approx(0.1) and a * 8 + b * 32 == pytest.approx(0.4)


@pytest.mark.parametrize("busy_share, reserved", [(1.0, True), (0.5, True), (0.25, False)])
def test_the_milp_reserves_what_is_busy_often_enough(busy_share, reserved):
    """A reservation at 0.4 x on-demand pays when the load is there more than 40% of the
    time (paper 000 §2's marginal rule)."""
    slots = 24
    busy = int(slots * busy_share)
    load = np.array([[8.0, 32.0]] * busy + [[0.0, 0.0]] * (slots - busy))
    n = milp_mix(load, 3600.0, CAPS, 0.4 * OD, unit_prices(CAPS, OD))
    covered = (np.array(n)[:, None] * CAPS).sum(axis=0)
    assert covered.tolist() == ([8.0, 32.0] if reserved else [0.0, 0.0])


def test_the_commitment_covers_the_usage_seen_often_enough():
    usage = np.array([10.0] * 12 + [2.0] * 12)  # $/h at on-demand
    # a 28% discount: covering $1 of usage costs 0.72 $; worth it where usage is there
    # more than 72% of the time: the 2 $/h base, not the 10 $/h half
    c = milp_commitment(usage, 3600.0, 0.28, 1.0)
    assert c == pytest.approx(2.0 * 0.72, rel=1e-6)
    assert milp_commitment(usage, 3600.0, 0.28, 0.3) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.slow
def test_advise_commit_reserved_searches_a_few_replays_and_reports_the_curve(capsys):
    code = main(["advise", "--commit", "reserved", "--trace", "synthetic:google?scale=0.01",
                 "--hours", "3", "--market", "on-demand", "--waiting", "ajw-t:b=300",
                 "--replays", "6", "--jobs", "1", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    pts = doc["points"]
    assert 3 <= doc["replays"] == len(pts) <= 6
    assert len({p["commitment"] for p in pts}) == len(pts)
    assert doc["optimum"] == min(pts, key=lambda p: p["total_cost_usd"])
    assert doc["at_milp"]["commitment"] in {p["commitment"] for p in pts}
    assert pts[0]["commitment"] == "none" and pts[0]["commitment_cost_usd"] == 0.0
    for p in pts:
        assert p["total_cost_usd"] == pytest.approx(p["commitment_cost_usd"]
                                                    + p["cloud_cost_usd"], abs=1e-3)
        assert p["tasks_unfinished"] == 0


@pytest.mark.parametrize("argv, what", [
    (["--commit", "reserved", "--policy", "njw"], "--policy is not an option"),
    (["--policy", "njw", "--reserved-cores", "4", "--reserved-mem-gb", "8",
      "--scheduler", "stratus"], "--scheduler is not an option"),
    (["--commit", "reserved", "--reserved", "m4.large:1"], "drop --reserved"),
    (["--commit", "everything"], "--commit"),
    (["--commit", "reserved", "--replays", "1"], "--replays"),
    (["--commit", "savings-plan", "--savings-plan", "5"], "drop --savings-plan")])
def test_advise_modes_refuse_each_others_options(argv, what, capsys):
    code = main(["advise", "--trace", "synthetic:google?scale=0.01", "--hours", "1", *argv])
    err = capsys.readouterr().err
    assert code == 2 and what in err and len(err.strip().splitlines()) == 1, err


def test_the_advisors_plan_discount_is_the_engines_default():
    from stratus.app.spec.replay import PLAN_DISCOUNT
    from stratus.commitments.savings import DEFAULT_DISCOUNT

    assert PLAN_DISCOUNT == DEFAULT_DISCOUNT


@pytest.mark.slow
def test_advise_commit_savings_plan_reports_levels(capsys):
    code = main(["advise", "--commit", "savings-plan", "--trace", "synthetic:google?scale=0.01",
                 "--hours", "3", "--market", "on-demand", "--replays", "5", "--jobs", "1",
                 "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["milp_usd_per_hour"] > 0  # on demand a plan pays on the steady part
    assert doc["points"][0]["commitment"] == "0 $/h"
    for p in doc["points"][1:]:
        assert p["commitment_cost_usd"] > 0
    assert doc["optimum"]["total_cost_usd"] <= doc["points"][0]["total_cost_usd"]


@pytest.mark.slow
def test_advise_commit_prints_its_table_once(capsys, spawner_lock):
    """Its progress lines (in workers: one per finished replay) repeated each point's bill:
    the table was printed twice, once line by line on stderr. Progress says which replay
    ended; the bills are the table's."""
    with spawner_lock():
        code = main(["advise", "--commit", "reserved", "--trace",
                     "synthetic:google?scale=0.01", "--hours", "2", "--market", "on-demand",
                     "--replays", "3", "--jobs", "2"])
    out, err = capsys.readouterr()
    assert code == 0
    rows = [line for line in out.splitlines() if line.lstrip("* ").startswith(("none", "m4."))]
    assert len(rows) >= 3
    for row in rows:
        total = row.split()[-5]  # the total $ column
        assert total not in err
    progress = [line for line in err.splitlines() if line.startswith("advise: replay")]
    assert len(progress) == len(rows) and "of at most 3 done" in progress[0]

