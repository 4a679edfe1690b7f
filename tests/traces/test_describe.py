"""Trace characterisation (traces/describe.py) against hand-computed answers."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from stratus.pricing.catalog import M5
from stratus.traces import swf
from stratus.traces.describe import describe, plot
from stratus.traces.schema import Trace
from tests.helpers.paths import TESTS

HERE = TESTS


def _trace() -> Trace:
    """Three jobs, four tasks, two users; every number below is worked out by hand."""
    rows = [  # job, task, submit, runtime, cpu, mem_gib, user
        (1, 0, 0.0, 10.0, 1.0, 2.0, "a"),   # 1*4 >= 2: CPU-constrained
        (1, 1, 0.0, 30.0, 1.0, 4.0, "a"),   # 1*4 == 4: a tie counts as CPU
        (2, 0, 50.0, 50.0, 2.0, 16.0, "a"),  # 2*4 < 16: memory; ends last, at 100
        (3, 0, 20.0, 20.0, 0.5, 1.0, "b"),  # 0.5*4 >= 1: CPU
    ]
    df = pd.DataFrame(rows, columns=["job_id", "task_id", "submit_s", "runtime_s", "cpu",
                                     "mem_gib", "user"])
    df["job_name"] = "x"
    df["priority"] = 0
    return Trace(df, name="hand")


def _tasks(submit, priority=0) -> Trace:
    """One single-task job per submit time (1 vCPU, 1 GiB, 10 s), with ``priority``."""
    n = len(submit)
    df = pd.DataFrame({"job_id": range(n), "task_id": 0, "submit_s": submit, "runtime_s": 10.0,
                       "cpu": 1.0, "mem_gib": 1.0, "user": "u", "job_name": "x",
                       "priority": priority})
    return Trace(df, name="tasks")


def _plain(obj) -> bool:
    """Only dicts, lists, str, bool, int, float and None (no numpy scalars)."""
    if isinstance(obj, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in obj.items())
    if isinstance(obj, list):
        return all(_plain(v) for v in obj)
    return obj is None or type(obj) in (str, bool, int, float)


def test_sizes_and_span():
    d = describe(_trace())
    assert (d["jobs"], d["tasks"], d["users"]) == (3, 4, 2)
    assert (d["start_s"], d["end_s"], d["span_s"]) == (0.0, 100.0, 100.0)


def test_runtime_and_tasks_per_job_percentiles():
    d = describe(_trace())
    # runtimes sorted 10, 20, 30, 50; numpy's linear percentile: p10 at rank 0.3, p90 at 2.7
    assert d["runtime_s"] == pytest.approx(
        {"mean": 27.5, "p10": 13.0, "p50": 25.0, "p90": 44.0, "p99": 49.4, "max": 50.0})
    # tasks per job sorted 1, 1, 2; p90 at rank 1.8
    assert d["tasks_per_job"] == pytest.approx(
        {"mean": 4 / 3, "p50": 1.0, "p90": 1.8, "p99": 1.98, "max": 2.0})


def test_single_task_job_share():
    assert describe(_trace())["single_task_job_share"] == pytest.approx(2 / 3)  # jobs 2 and 3
    assert describe(_tasks([0.0, 5.0]))["single_task_job_share"] == 1.0


def test_request_percentiles_are_over_task_rows():
    d = describe(_trace())
    # cpu over the four tasks, sorted 0.5, 1, 1, 2 (job 1's two tasks count twice; over
    # jobs it would be 0.5, 1, 2): p10 at rank 0.3, p50 at 1.5, p90 at 2.7, p99 at 2.97
    assert d["cpu_request"] == pytest.approx({"p10": 0.65, "p50": 1.0, "p90": 1.7, "p99": 1.97})
    # memory sorted 1, 2, 4, 16
    assert d["mem_request_gib"] == pytest.approx(
        {"p10": 1.3, "p50": 3.0, "p90": 12.4, "p99": 15.64})


def test_priority_bands_and_their_edges():
    # 1|2 and 8|9 are the band edges: free 0-1, middle 2-8, production 9-11
    d = describe(_tasks([0.0] * 8, priority=[0, 1, 1, 2, 8, 8, 9, 11]))
    assert d["priority_share"] == {"free": 3 / 8, "middle": 3 / 8, "production": 2 / 8}


def test_priorities_outside_the_bands_are_other_and_only_then():
    d = describe(_tasks([0.0] * 5, priority=[-1, 0, 11, 12, 100]))
    assert d["priority_share"] == {"free": 0.2, "middle": 0.0, "production": 0.2, "other": 0.6}
    assert sum(d["priority_share"].values()) == pytest.approx(1.0)
    assert "other" not in describe(_trace())["priority_share"]
    assert describe(_trace())["priority_share"] == {"free": 1.0, "middle": 0.0, "production": 0.0}


def test_arrivals_per_whole_hour():
    # first submit 100 s: hours [100, 3700), [3700, 7300), [7300, 10900) are whole; the
    # last submit is at 11000, so [10900, 11000) is a partial hour and left out
    submit = ([100.0, 200.0, 3699.0]          # hour 0: 3
              + [3700.0]                        # hour 1: 1 (3700 starts hour 1)
              + [7300.0, 8000.0, 9000.0, 10000.0, 10899.0]  # hour 2: 5
              + [10900.0, 11000.0])             # partial hour: not counted
    d = describe(_tasks(submit))["arrivals_per_hour"]
    # counts 3, 1, 5 sorted 1, 3, 5: p10 at rank 0.2, p90 at rank 1.8
    assert d == pytest.approx({"p10": 1.4, "p50": 3.0, "p90": 4.6, "max": 5.0,
                               "peak_to_trough": 5.0})


def test_arrivals_ignore_the_runtime_tail():
    # two whole hours of arrivals, then tasks running for a day: the span is ~26 h, but the
    # hours after the last submit are not arrival hours
    t = _tasks([0.0, 10.0, 3600.0, 7200.0])
    t.frame["runtime_s"] = 86_400.0
    d = describe(t)["arrivals_per_hour"]
    assert d == pytest.approx({"p10": 1.1, "p50": 1.5, "p90": 1.9, "max": 2.0,
                               "peak_to_trough": 2.0})  # counts 2, 1


def test_arrivals_with_an_empty_hour_or_less_than_an_hour():
    d = describe(_tasks([0.0, 7200.0]))["arrivals_per_hour"]  # hours 0 and 1: 1 and 0
    assert d["max"] == 1.0 and d["p10"] == pytest.approx(0.1) and d["peak_to_trough"] is None
    short = describe(_tasks([0.0, 60.0, 3599.0]))["arrivals_per_hour"]  # no whole hour
    assert short == {"p10": 0.0, "p50": 0.0, "p90": 0.0, "max": 0.0, "peak_to_trough": None}
    exact = describe(_tasks([0.0, 60.0, 3600.0]))["arrivals_per_hour"]  # one, the last excluded
    assert exact == {"p10": 2.0, "p50": 2.0, "p90": 2.0, "max": 2.0, "peak_to_trough": 1.0}


def test_constrained_shares():
    assert describe(_trace())["constrained"] == {"cpu": 0.75, "mem": 0.25}


def test_offered_load():
    load = describe(_trace())["offered_load"]
    # vCPU-s: 10 + 30 + 100 + 10 = 150; GiB-s: 20 + 120 + 800 + 20 = 960; span 100 s
    assert load["vcpu"] == pytest.approx(1.5)
    assert load["mem_gib"] == pytest.approx(9.6)
    # m4.16xlarge is 64 vCPU / 256 GiB: max(1.5/64, 9.6/256) = 0.0375 (memory binds)
    assert load["m4_16xlarge_equivalents"] == pytest.approx(0.0375)


def test_other_catalog_names_its_largest_type():
    load = describe(_trace(), catalog=M5)["offered_load"]
    assert load["m5_24xlarge_equivalents"] == pytest.approx(9.6 / 384)


def test_json_serialisable_plain_values():
    d = describe(_trace())
    assert _plain(d)
    assert json.loads(json.dumps(d)) == d
    assert "load_report" not in d  # a hand-made trace has none


def test_load_report_is_passed_through():
    t = swf.load(HERE / "fixtures" / "swf" / "small.swf")
    d = describe(t)
    assert d["load_report"] == t.meta["load_report"]
    assert _plain(d)


def test_a_source_without_priorities_reads_unknown_not_free(tmp_path):
    """Issue 36: SWF has no priority field; its loader's 0 is a default, and describing it
    as 100% "free" said something the log never did. Through a window, a Parquet
    conversion too; a generic table says unknown only without a
    priority column."""
    from stratus.traces import generic

    t = swf.load(HERE / "fixtures" / "swf" / "small.swf")
    assert describe(t)["priority_share"] == {"unknown": 1.0}
    assert describe(t.window(0, 1))["priority_share"] == {"unknown": 0.0}  # no task
    t.to_parquet(tmp_path / "t.parquet")
    assert describe(Trace.from_parquet(tmp_path / "t.parquet"))["priority_share"] == {
        "unknown": 1.0}
    csv = tmp_path / "t.csv"
    csv.write_text("id,sub,run,cpu,mem,prio\n1,0,10,1,1,10\n2,5,10,1,1,0\n")
    cols = dict(job_id="id", submit_s="sub", runtime_s="run", cpu="cpu", mem_gib="mem")
    assert describe(generic.load(csv, **cols))["priority_share"] == {"unknown": 1.0}
    assert describe(generic.load(csv, **cols, priority="prio"))["priority_share"] == {
        "free": 0.5, "middle": 0.0, "production": 0.5}


def test_window_and_empty_trace():
    t = _trace()
    w = describe(t.window(10, 60, inside=True))  # jobs 2 (50..100) crosses 60; only job 3
    assert (w["jobs"], w["tasks"], w["start_s"], w["end_s"], w["span_s"]) == (1, 1, 20, 40, 20)
    assert w["offered_load"]["vcpu"] == pytest.approx(0.5)
    empty = describe(t.window(500, 600))
    assert (empty["jobs"], empty["tasks"], empty["users"], empty["span_s"]) == (0, 0, 0, 0.0)
    assert empty["runtime_s"]["max"] == 0.0 and empty["offered_load"]["vcpu"] == 0.0
    assert empty["single_task_job_share"] == 0.0 and empty["cpu_request"]["p99"] == 0.0
    assert empty["priority_share"] == {"free": 0.0, "middle": 0.0, "production": 0.0}
    assert empty["arrivals_per_hour"]["max"] == 0.0
    assert empty["arrivals_per_hour"]["peak_to_trough"] is None
    assert _plain(empty) and _plain(w)


@pytest.mark.slow
def test_nasa_log_summary():
    d = describe(swf.load(HERE / "data" / "NASA-iPSC-1993-3.1-cln.swf.gz"))
    assert (d["jobs"], d["tasks"], d["span_s"]) == (18_239, 18_239, 7_949_022.0)
    assert (d["runtime_s"]["p50"], d["runtime_s"]["max"]) == (86.0, 62_643.0)
    assert d["tasks_per_job"]["max"] == 1.0 and d["single_task_job_share"] == 1.0
    assert d["priority_share"] == {"unknown": 1.0}  # SWF has no priority field
    # with no memory data every job gets 4 GiB per processor: exactly on the m4 ratio
    assert d["constrained"] == {"cpu": 1.0, "mem": 0.0}
    # 128 nodes about 47% busy on average
    assert d["offered_load"]["vcpu"] == pytest.approx(59.66, abs=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("make", [_trace, lambda: _trace().window(500, 600)])
def test_plot_writes_a_png(tmp_path, make):
    out = plot(make(), tmp_path / "trace.png")
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
