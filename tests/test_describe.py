"""Trace characterisation (traces/describe.py) against hand-computed answers."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from pricing.catalog import M5
from traces import swf
from traces.describe import describe, plot
from traces.schema import Trace

HERE = Path(__file__).parent


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


def _plain(obj) -> bool:
    """Only dicts, lists, str, bool, int and float (no numpy scalars)."""
    if isinstance(obj, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in obj.items())
    if isinstance(obj, list):
        return all(_plain(v) for v in obj)
    return type(obj) in (str, bool, int, float)


def test_sizes_and_span():
    d = describe(_trace())
    assert (d["jobs"], d["tasks"], d["users"]) == (3, 4, 2)
    assert (d["start_s"], d["end_s"], d["span_s"]) == (0.0, 100.0, 100.0)


def test_runtime_and_tasks_per_job_percentiles():
    d = describe(_trace())
    # runtimes sorted 10, 20, 30, 50; numpy's linear percentile: p90 at rank 2.7
    assert d["runtime_s"] == pytest.approx(
        {"mean": 27.5, "p50": 25.0, "p90": 44.0, "p99": 49.4, "max": 50.0})
    # tasks per job sorted 1, 1, 2; p90 at rank 1.8
    assert d["tasks_per_job"] == pytest.approx(
        {"mean": 4 / 3, "p50": 1.0, "p90": 1.8, "p99": 1.98, "max": 2.0})


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


def test_window_and_empty_trace():
    t = _trace()
    w = describe(t.window(10, 60, inside=True))  # jobs 2 (50..100) crosses 60; only job 3
    assert (w["jobs"], w["tasks"], w["start_s"], w["end_s"], w["span_s"]) == (1, 1, 20, 40, 20)
    assert w["offered_load"]["vcpu"] == pytest.approx(0.5)
    empty = describe(t.window(500, 600))
    assert (empty["jobs"], empty["tasks"], empty["users"], empty["span_s"]) == (0, 0, 0, 0.0)
    assert empty["runtime_s"]["max"] == 0.0 and empty["offered_load"]["vcpu"] == 0.0
    assert _plain(empty)


def test_nasa_log_summary():
    d = describe(swf.load(HERE / "data" / "NASA-iPSC-1993-3.1-cln.swf.gz"))
    assert (d["jobs"], d["tasks"], d["span_s"]) == (18_239, 18_239, 7_949_022.0)
    assert (d["runtime_s"]["p50"], d["runtime_s"]["max"]) == (86.0, 62_643.0)
    assert d["tasks_per_job"]["max"] == 1.0
    # with no memory data every job gets 4 GiB per processor: exactly on the m4 ratio
    assert d["constrained"] == {"cpu": 1.0, "mem": 0.0}
    # 128 nodes about 47% busy on average
    assert d["offered_load"]["vcpu"] == pytest.approx(59.66, abs=0.01)


@pytest.mark.parametrize("make", [_trace, lambda: _trace().window(500, 600)])
def test_plot_writes_a_png(tmp_path, make):
    out = plot(make(), tmp_path / "trace.png")
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
