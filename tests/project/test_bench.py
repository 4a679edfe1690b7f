"""The replay benchmark's pieces on a tiny trace: the JSON it writes, never its speed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_replay",
                                                  ROOT / "benchmarks" / "bench_replay.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_benchmark_document_on_a_tiny_trace(bench, tmp_path):
    todo = bench.cases(["google"], [0.01, 0.02], hours=1, seed=1)
    assert [c["volume"] for c in todo] == [0.01, 0.02]
    rows = [bench.run_case(c, "task-per-instance") for c in todo]
    doc = bench.document(rows, {"schedulers": ["task-per-instance"]})
    path = bench.write(doc, tmp_path)
    back = json.loads(path.read_text())
    assert path.parent == tmp_path and path.name.startswith("replay-") and back == doc
    assert {"created", "options", "machine", "runs", "scaling"} <= back.keys()
    assert {"cpu_count", "python", "git_commit"} <= back["machine"].keys()
    for r in back["runs"]:
        assert r["exit_code"] == 0 and "error" not in r
        assert r["trace"] == "google" and r["scheduler"] == "task-per-instance"
        assert r["tasks"] > 0 and r["wall_s"] > 0 and r["peak_rss_mib"] > 0
        assert r["tasks_per_s"] == pytest.approx(r["tasks"] / r["wall_s"], rel=0.01, abs=0.1)
        assert {"cpu_s", "replay_s", "total_cost_usd"} <= r.keys()
    (fit,) = back["scaling"]
    assert fit["trace"] == "google" and fit["volumes"] == [0.01, 0.02]
    assert fit["exponent"] is None or isinstance(fit["exponent"], float)
    text = bench.table(doc)
    assert "peak RSS MiB" in text and "scaling exponent" in text


@pytest.mark.slow
def test_a_failing_run_is_a_row_with_its_error(bench):
    case = {"trace": "google", "volume": 0.01, "argv": ["--trace", "synthetic:nope"]}
    row = bench.run_case(case, "task-per-instance")
    assert row["exit_code"] == 2 and "unknown synthetic generator" in row["error"]
    assert row["tasks"] is None


def test_scaling_exponent_is_the_log_log_slope(bench):
    assert bench.exponent([(1000, 2.0), (2000, 4.0), (4000, 8.0)]) == 1.0
    assert bench.exponent([(1000, 1.0), (4000, 16.0)]) == 2.0
    assert bench.exponent([(1000, 1.0)]) is None


def test_the_real_window_is_skipped_with_a_note_without_shared_data(bench, monkeypatch, capsys):
    monkeypatch.setattr(bench, "SHARED", Path("/nonexistent/shared/data"))
    todo = bench.cases(["google2011", "google"], [0.25])
    assert [c["trace"] for c in todo] == ["google"]
    assert "skipping the real Google 2011 window" in capsys.readouterr().err


@pytest.mark.slow
def test_the_sww_benchmark_in_quick_mode(capsys):
    """bench_sww.py --quick --json: one JSON document, a row per policy and size, the
    exponents, and the reference forecast's replay billed the same to the bit."""
    spec = importlib.util.spec_from_file_location("bench_sww",
                                                  ROOT / "benchmarks" / "bench_sww.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--quick", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["benchmark"] == "sww" and doc["sizes"] == list(mod.QUICK)
    assert sorted((r["policy"], r["tasks"]) for r in doc["runs"]) == sorted(
        (p, n) for p in ("njw", "sww") for n in mod.QUICK)
    assert all(r["wall_s"] > 0 for r in doc["runs"])
    assert set(doc["scaling_exponent"]) == {"sww", "njw"}
    (ref,) = doc["reference"]
    assert ref["policy"] == "sww (reference)" and ref["same_as_incremental"] is True
    assert mod.exponent([(1000, 1.0), (4000, 16.0)]) == 2.0


def test_a_window_repeated_is_the_same_load_again_with_new_jobs(tmp_path):
    """benchmarks/repeat_window.py (issue 39's month-scale input): copy c of a window is the
    window moved by c whole hours past its length, with job ids past the last copy's."""
    import pyarrow.parquet as pq

    from tests.helpers.trace import make_trace

    spec = importlib.util.spec_from_file_location("repeat_window",
                                                  ROOT / "benchmarks" / "repeat_window.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    src = tmp_path / "w.parquet"
    trace = make_trace([(0, 0, 10.0, 60.0, 1, 2), (0, 1, 10.0, 30.0, 1, 2),
                        (4, 0, 5000.0, 90.0, 2, 4)])
    trace.to_parquet(src)
    table = pq.read_table(src)
    out = mod.repeat(table, 3).to_pandas()
    assert len(out) == 9
    period = 7200.0  # 4,990 s of submits, rounded up to whole hours
    assert out["submit_s"].tolist() == [s + c * period for c in range(3)
                                        for s in table["submit_s"].to_pylist()]
    assert out["job_id"].tolist() == [j + c * 5 for c in range(3)
                                      for j in table["job_id"].to_pylist()]
    assert out.groupby("job_id").size().tolist() == [2, 1] * 3

