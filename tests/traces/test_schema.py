"""The canonical schema: validation errors name rows and fields; the Parquet reader only
ever fails with TraceError."""

from __future__ import annotations

import contextlib

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.base.errors import TraceError
from stratus.pricing.catalog import M4
from stratus.traces.schema import Trace, fit_to_catalog, validate_frame
from tests.helpers.trace import make_trace


def frame(**over):
    df = make_trace([(1, 0, 0.0, 10.0, 1.0, 1.0), (1, 1, 5.0, 20.0, 2.0, 4.0),
                     (2, 0, 3.0, 30.0, 0.5, 2.0)]).frame
    for k, v in over.items():
        df[k] = v
    return df


@pytest.mark.parametrize("col, values, message", [
    ("runtime_s", [10.0, -1.0, 5.0], "runtime_s must be > 0"),
    ("cpu", [1.0, "x", 1.0], "column 'cpu' is not a number"),
    ("mem_gib", [1.0, None, 1.0], "column 'mem_gib' is empty"),
    ("task_id", [0, 0, 0], "duplicate \\(job_id, task_id\\)"),
    ("priority", [0, 1.5, 0], "must be an integer"),
])
def test_validation_names_the_row_and_field(col, values, message):
    df = frame()
    df[col] = values
    with pytest.raises(TraceError, match=message):
        validate_frame(df, "f.csv")


def test_missing_column_is_named():
    with pytest.raises(TraceError, match="missing required column\\(s\\) runtime_s"):
        validate_frame(frame().drop(columns=["runtime_s"]), "f.csv")


def test_oversized_tasks_refused_or_dropped_and_counted():
    tr = make_trace([(1, 0, 0.0, 10.0, 1.0, 1.0), (2, 0, 0.0, 10.0, 80.0, 1.0),
                     (2, 1, 0.0, 10.0, 1.0, 1.0)])
    with pytest.raises(TraceError, match="larger than every m4 instance type"):
        fit_to_catalog(tr, M4, drop=False)
    kept = fit_to_catalog(tr, M4, drop=True)
    assert kept.n_jobs == 1 and kept.n_tasks == 1  # the whole job with the big task goes
    assert kept.meta["load_report"]["dropped"] == {"jobs with a task larger than every m4 type": 1}


def test_parquet_round_trip(tmp_path):
    tr = Trace(frame(), name="x")
    tr.to_parquet(tmp_path / "t.parquet")
    back = Trace.from_parquet(tmp_path / "t.parquet")
    assert back.name == "x"
    pd.testing.assert_frame_equal(back.frame, tr.frame)


@pytest.mark.slow
@settings(max_examples=60)
@given(st.data())
def test_corrupt_parquet_gives_a_trace_or_trace_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("pq") / "t.parquet"
    Trace(frame(), name="x").to_parquet(path)
    raw = bytearray(path.read_bytes())
    how = data.draw(st.sampled_from(["flip", "truncate", "garbage"]))
    if how == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] ^= 1 << data.draw(st.integers(0, 7))
    elif how == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    else:
        raw = bytearray(data.draw(st.binary(max_size=200)))
    path.write_bytes(bytes(raw))
    with contextlib.suppress(TraceError):  # anything else fails the test
        Trace.from_parquet(path)


# --- the optional anti_affinity flag ------------------------------------------------------

FLAG_SPELLINGS = {True: [True, 1, 1.0, "1", "true", "TRUE", " True "],
                  False: [False, 0, 0.0, "0", "false", "False"]}


@pytest.mark.slow
@settings(max_examples=60)
@given(st.lists(st.sampled_from([(v, s) for v, ss in FLAG_SPELLINGS.items() for s in ss]),
                min_size=3, max_size=3))
def test_anti_affinity_spellings_coerce_to_bool(pairs):
    out = validate_frame(frame(anti_affinity=pd.Series([s for _, s in pairs], dtype=object)))
    assert out["anti_affinity"].dtype == bool
    assert out["anti_affinity"].tolist() == [v for v, _ in pairs]


@pytest.mark.parametrize("values, message", [
    ([0, 2, 1], "column 'anti_affinity' must be 0/1 or true/false at row 1 \\(job 2, task 0\\)"),
    (["yes", "0", "1"], "must be 0/1 or true/false at row 0"),
    ([0.5, 0, 1], "must be 0/1 or true/false at row 0"),
    ([0, 1, None], "column 'anti_affinity' is empty at row 2"),
])
def test_bad_anti_affinity_names_the_row(values, message):
    with pytest.raises(TraceError, match=message):
        validate_frame(frame(anti_affinity=pd.Series(values, dtype=object)), "f.csv")


def test_anti_affinity_parquet_round_trip_and_window(tmp_path):
    tr = Trace(frame(anti_affinity=[1, 0, "true"]), name="x")
    tr.to_parquet(tmp_path / "t.parquet")
    back = Trace.from_parquet(tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(back.frame, tr.frame)
    assert back.frame["anti_affinity"].tolist() == [True, False, True]
    assert back.window(2.0, 4.0, inside=False).frame["anti_affinity"].tolist() == [False]


def test_generic_loader_carries_anti_affinity(tmp_path):
    from stratus.traces import generic
    from stratus.traces.describe import describe

    path = tmp_path / "t.csv"
    path.write_text("job,submit,run,cpu,mem,aa\n1,0,10,1,1,1\n1,1,10,1,1,TRUE\n"
                    "2,2,10,1,1,\n3,3,10,1,1,false\n")
    opts = dict(job_id="job", submit_s="submit", runtime_s="run", cpu="cpu", mem_gib="mem",
                anti_affinity="aa")
    tr = generic.load(path, **opts)
    assert tr.frame["anti_affinity"].tolist() == [True, True, False, False]
    assert "1 rows have no anti_affinity value; taken as false" in tr.meta["load_report"]["notes"]
    assert describe(tr)["anti_affinity"] == {"tasks": 2, "jobs": 1}
    assert "anti_affinity" not in describe(Trace(frame()))  # only a trace that has the column
    path.write_text("job,submit,run,cpu,mem,aa\n1,0,10,1,1,1\n1,1,10,1,1,2\n")
    with pytest.raises(TraceError, match=r"t\.csv:3: column 'aa' \(anti_affinity\): must be "
                                         r"0/1 or true/false, got '2'"):
        generic.load(path, **opts)
