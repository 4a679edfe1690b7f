"""compare's normalized cost, cost over the bound and multi-slice spread; sensitivity (Fig. 8)."""

from __future__ import annotations

import json
import math

import pytest

from stratus.app.cli import main
from stratus.app.comparison import aggregate, annotate, sensitivity, spread

SMALL = ["--trace", "synthetic:google?scale=0.02", "--hours", "4", "--seed", "3",
         "--no-progress"]


def _run(name, cost, lb_int=None, lb=1.0, **extra):
    r = {"scheduler": name, "total_cost_usd": cost, "lower_bound_cost_usd": lb,
         "utilization": {"constraining": 0.5}, "latency": {"p50": 1.0, "p95": 2.0},
         "instances_acquired": 3, "migrations": 0, **extra}
    if lb_int is not None:
        r["lower_bound_integer_usd"] = lb_int
    return r


def test_annotate_normalizes_to_the_most_expensive_and_prefers_the_integer_bound():
    runs = annotate([_run("a", 5.0, lb_int=2.5), _run("b", 10.0, lb=4.0)])
    assert [r["normalized_cost"] for r in runs] == [0.5, 1.0]
    assert runs[0]["cost_over_bound"] == 2.0 and runs[0]["bound_used"] == "lower_bound_integer_usd"
    assert runs[1]["cost_over_bound"] == 2.5 and runs[1]["bound_used"] == "lower_bound_cost_usd"


def test_normalized_cost_never_divides_by_a_cost_model():
    """Issue 36: compare divided by the most expensive run, Fargate included (Stratus 0.18
    beside Fargate's 1.0), while the report left Fargate out (0.89 for the same run)."""
    runs = annotate([_run("stratus", 1.0), _run("fleet", 2.0), _run("fargate", 8.0)])
    by = {r["scheduler"]: r for r in runs}
    assert [by[n]["normalized_cost"] for n in ("stratus", "fleet", "fargate")] == [0.5, 1, 4]
    assert {r["normalized_by"] for r in runs} == {"fleet"}
    only = annotate([_run("fargate", 3.0)])  # no policy to divide by
    assert only[0]["normalized_cost"] is None and only[0]["normalized_by"] is None


def test_normalized_cost_divides_by_the_papers_four_when_all_ran():
    """Stratus Fig. 4 normalizes over its four schedulers: a dearer fifth (one task per
    instance) is not the divisor then, but is without all four."""
    four = [_run("stratus", 1.0), _run("fleet", 2.0), _run("hotspot", 4.0), _run("scloud", 3.0)]
    runs = annotate([*four, _run("task-per-instance", 10.0)])
    assert [r["normalized_cost"] for r in runs] == [0.25, 0.5, 1.0, 0.75, 2.5]
    runs = annotate([_run("stratus", 1.0), _run("task-per-instance", 10.0)])
    assert [r["normalized_cost"] for r in runs] == [0.1, 1.0]


def test_the_report_normalizes_as_compare_does():
    """One definition: the report's figures divide each window's costs as annotate does."""
    import pandas as pd

    from stratus.app.figures import _normalize

    costs = {"stratus": 1.0, "fleet": 2.0, "hotspot": 4.0, "scloud": 3.0, "fargate": 9.0,
             "stratus-oracle": 0.9, "task-per-instance": 12.0}
    windows = [(0, 1), (1, 1)]
    df = pd.DataFrame([{"trace_label": "t", "window": w, "scheduler": n,
                        "total_cost_usd": c * (1 + k)} for k, w in enumerate(windows)
                       for n, c in costs.items()])
    got = _normalize(df)
    for k, _ in enumerate(windows):
        want = annotate([_run(n, c * (1 + k)) for n, c in costs.items()])
        mine = got.iloc[k * len(costs):(k + 1) * len(costs)]
        assert list(mine["normalized_cost"]) == pytest.approx(
            [r["normalized_cost"] for r in want])


def test_compare_tables_name_what_normalized_divides_by():
    from stratus.app.report import comparison_table, slices_table

    text = comparison_table(annotate([_run("stratus", 1.0, wall_seconds=0.1),
                                      _run("fargate", 8.0, wall_seconds=0.1)]))
    assert text.splitlines()[-1] == ("normalized = cost ÷ the most expensive of stratus, "
                                     "fleet, hotspot and scloud on the same window when all "
                                     "four ran (Stratus Fig. 4), else ÷ the most expensive "
                                     "policy that ran; a cost model such as fargate is never "
                                     "the divisor (here stratus's)")
    agg = aggregate([annotate([_run("stratus", 1.0)])])
    assert "normalized = cost ÷ the most expensive" in slices_table(agg)


def test_annotate_free_runs_have_no_ratio():
    runs = annotate([_run("a", 0.0, lb=0.0)])
    assert runs[0]["normalized_cost"] is None and runs[0]["cost_over_bound"] is None


def test_spread_is_sample_statistics_of_finite_values():
    d = spread([1.0, 3.0, None, math.nan])
    assert d == {"mean": 2.0, "std": pytest.approx(math.sqrt(2), abs=1e-6), "min": 1.0,
                 "max": 3.0, "n": 2}
    assert spread([None]) is None


def test_aggregate_keeps_scheduler_order_and_counts_slices():
    s1 = annotate([_run("x", 2.0), _run("y", 4.0)])
    s2 = annotate([_run("x", 3.0), _run("y", 3.0)])
    agg = aggregate([s1, s2])
    assert [a["scheduler"] for a in agg] == ["x", "y"]
    assert agg[0]["slices"] == 2
    assert agg[0]["normalized_cost"]["mean"] == pytest.approx(0.75)
    assert agg[1]["total_cost_usd"]["min"] == 3.0


def test_sensitivity_relates_every_scheduler_to_the_first_and_to_h1():
    pts = [(1.0, [_run("s", 10.0, instances_cleared=2), _run("n", 11.0)]),
           (0.01, [_run("s", 20.0, instances_cleared=9), _run("n", 30.0)])]
    doc = sensitivity(pts)
    assert doc["h"] == [0.01, 1.0] and doc["schedulers"] == ["s", "n"]
    rel = {(r["h"], r["scheduler"]): r["cost_ratio"] for r in doc["relative"]}
    assert rel == {(0.01, "n"): 1.5, (1.0, "n"): 1.1}
    by = {(p["h"], p["scheduler"]): p for p in doc["points"]}
    assert by[(0.01, "s")]["cost_over_h1"] == 2.0
    assert by[(0.01, "n")]["instances_cleared"]["mean"] == 0  # no migrator: none cleared


@pytest.mark.slow
def test_compare_json_has_normalized_cost_and_cost_over_bound(capsys):
    assert main(["compare", *SMALL, "--schedulers", "stratus,task-per-instance", "--jobs", "1",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    runs = {r["scheduler"]: r for r in doc["runs"]}
    assert max(r["normalized_cost"] for r in runs.values()) == 1.0
    for r in runs.values():
        assert r["cost_over_bound"] >= 1.0
        assert r["normalized_cost"] == pytest.approx(
            r["total_cost_usd"] / max(x["total_cost_usd"] for x in runs.values()), abs=1e-6)


@pytest.mark.slow
def test_compare_over_slices_reports_each_slice_and_the_spread(capsys):
    assert main(["compare", *SMALL, "--schedulers", "task-per-instance,first-fit",
                 "--slices", "2", "--jobs", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["slice"] for s in doc["slices"]] == [0, 1]
    assert doc["slices"][0]["start_s"] != doc["slices"][1]["start_s"]
    agg = {a["scheduler"]: a for a in doc["runs"]}
    costs = [r["total_cost_usd"] for s in doc["slices"] for r in s["runs"]
             if r["scheduler"] == "first-fit"]
    assert agg["first-fit"]["total_cost_usd"]["mean"] == pytest.approx(sum(costs) / 2, abs=1e-5)
    assert agg["first-fit"]["slices"] == 2


@pytest.mark.slow
def test_one_slice_of_many_is_the_same_as_slices_one(capsys):
    main(["compare", *SMALL, "--schedulers", "first-fit", "--slice", "0", "--slices", "1",
          "--jobs", "1", "--json"])
    one = json.loads(capsys.readouterr().out)["runs"][0]
    main(["compare", *SMALL, "--schedulers", "first-fit", "--slices", "1", "--jobs", "1",
          "--json"])
    many = json.loads(capsys.readouterr().out)["slices"][0]["runs"][0]
    assert one["total_cost_usd"] == many["total_cost_usd"]


@pytest.mark.slow
def test_sensitivity_json(capsys):
    assert main(["sensitivity", *SMALL, "--h", "1,10", "--jobs", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["h"] == [1.0, 10.0] and doc["schedulers"] == ["stratus", "stratus-noclear"]
    assert len(doc["points"]) == 4
    assert {r["h"] for r in doc["relative"]} == {1.0, 10.0}


@pytest.mark.parametrize(("argv", "what"), [
    (["compare", *SMALL, "--slices", "0"], "--slices"),
    (["compare", *SMALL, "--slices", "2", "--start", "0"], "--start"),
    (["compare", *SMALL, "--schedulers", "stratus,stratus"], "twice"),
    (["compare", *SMALL, "--schedulers", ","], "no scheduler"),
    (["sensitivity", *SMALL, "--h", "1,-2"], "--h"),
    (["sensitivity", *SMALL, "--h", "x"], "--h"),
    (["sensitivity", *SMALL, "--estimator", "oracle"], "--estimator"),
])
def test_bad_options_are_one_clear_error(argv, what, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert what in err and err.count("\n") == 1


# --- fields that do not apply (issue 35, item 5) --------------------------------------------
def test_a_scheduler_that_does_not_clear_cleared_zero_instances():
    """Its summary has no instances_cleared (docs/reference/metrics.md); the aggregate over
    slices and the sensitivity points count 0, not a missing value."""
    clears, does_not = _run("stratus", 5.0, instances_cleared=2), _run("hotspot", 6.0)
    agg = aggregate([annotate([dict(clears), dict(does_not)]),
                     annotate([dict(clears), dict(does_not)])])
    assert agg[0]["instances_cleared"]["mean"] == 2.0
    assert agg[1]["instances_cleared"] == {"mean": 0.0, "std": 0.0, "min": 0.0, "max": 0.0,
                                           "n": 2}
    points = sensitivity([(1.0, [clears, does_not])])["points"]
    assert [p["instances_cleared"]["mean"] for p in points] == [2.0, 0.0]


def test_a_sweep_row_of_a_scheduler_that_does_not_clear_counts_zero():
    from stratus.app.comparison import METRICS, metric
    from stratus.app.sweep_run import REPLAY_COLUMNS

    assert REPLAY_COLUMNS["instances_cleared"] == METRICS["instances_cleared"]
    assert metric(_run("hotspot", 1.0), "instances_cleared", ("instances_cleared",)) == 0
    assert metric(_run("x", 1.0), "latency_p50", ("latency", "p50")) == 1.0
    assert metric(_run("x", 1.0), "cost_over_bound", ("cost_over_bound",)) is None


@pytest.mark.slow
@pytest.mark.usefixtures("no_integer_bound")
def test_the_comparison_table_has_no_missing_values():
    """Every policy and the Fargate cost model, one window and over slices: no NaN, no None
    (the multi-slice table read utilization and latency where a spread has none)."""
    import stratus
    from stratus.app.registry import scheduler_names

    names = [*scheduler_names(), "fargate"]
    one = stratus.compare("synthetic:google?scale=0.01&hours=1", names, seed=1).table
    assert list(one["scheduler"]) == names
    assert not one.isna().any().any(), one
    assert (one.loc[one["scheduler"].isin(["hotspot", "fleet", "fargate"]),
                    "instances_cleared"] == 0).all()
    two = stratus.compare("synthetic:google?scale=0.01", ["stratus", "hotspot", "fargate"],
                          hours=0.5, slices=2, seed=1).table
    assert not two.isna().any().any(), two
    assert (two["utilization"] > 0).all() and (two["latency_p95"] >= 1).all()
