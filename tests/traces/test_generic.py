"""The generic column-mapping loader (traces/generic.py) on a Slurm-sacct-like table and a
table of millisecond/MB numbers, their Parquet copies, bad mappings and corrupted copies."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.base.errors import ConfigError, TraceError
from stratus.traces import generic
from stratus.traces.loaders import load_file
from stratus.traces.schema import Trace
from tests.helpers.corrupt import corrupt, ops
from tests.helpers.paths import FIXTURES

FIX = FIXTURES / "generic"
SACCT = FIX / "sacct.csv"
SACCT_MAP = FIX / "sacct_mapping.json"
TASKS = FIX / "tasks.csv"
TASKS_OPTS = {"job_id": "job", "submit_s": "submit_ms", "runtime_s": "duration_ms",
              "cpu": "cores", "mem_gib": "mem_mb", "user": "owner", "time_unit": "ms",
              "mem_unit": "MB"}
SUBMIT0 = pd.Timestamp("2023-03-01T09:45:00Z").timestamp()  # job 502's submit, the earliest


def _sacct(**extra) -> Trace:
    return generic.load(SACCT, mapping=str(SACCT_MAP), **extra)


def _task(t: Trace, job: int, task: int = 0) -> dict:
    f = t.frame
    return f[(f["job_id"] == job) & (f["task_id"] == task)].iloc[0].to_dict()


# --- sacct-like -----------------------------------------------------------------------


def test_sacct_mapping_file():
    t = _sacct()
    assert t.name == "sacct.csv"
    assert len(t) == 5 and t.n_jobs == 3  # array job 500 has three tasks; 502 dropped
    assert t.meta["origin_s"] == SUBMIT0
    a1 = _task(t, 500, 1)
    assert a1["submit_s"] == 15 * 60  # 10:00 - 09:45
    assert a1["runtime_s"] == 20 * 60  # End - Start, not End - Submit
    assert (a1["cpu"], a1["mem_gib"]) == (2.0, 4.0)  # 4096 MiB
    assert a1["estimate_s"] == 30 * 60  # TimelimitMin with time_unit=min
    assert (a1["user"], a1["job_name"], a1["queue"], a1["priority"]) == (
        "alice", "align", "compute", 100)
    assert t.meta["load_report"]["dropped"] == {"rows with runtime <= 0": 1}


def test_explicit_options_override_the_mapping_file():
    t = _sacct(job_id="JobIDRaw", task_id="ArrayTaskID", queue="State")
    assert sorted(t.frame["job_id"]) == [9001, 9002, 9003, 9010, 9012]
    assert _task(t, 9003, 2)["queue"] == "FAILED"


def test_registry_spec_with_inline_mapping():
    spec = ("generic?job_id=ArrayJobID&task_id=ArrayTaskID&submit_s=Submit&end_column=End"
            "&cpu=NCPUS&mem_gib=ReqMemMiB&mem_unit=mib&submit_format=ISO")
    t = load_file(SACCT, spec)
    # without start_column the runtime counts from Submit, so it includes the wait (and
    # job 502, cancelled at start 5 s after submit, now has a runtime)
    assert _task(t, 501)["runtime_s"] == 2.5 * 3600
    assert _task(t, 502)["runtime_s"] == 5
    assert set(t.frame["user"]) == {"unknown"}
    assert set(t.frame["job_name"]) == {"job-500", "job-501", "job-502", "job-503"}
    assert set(t.frame["priority"]) == {0}
    assert not t.has("queue") and not t.has("estimate_s")


# --- numbers with units, default task ids ------------------------------------------------


def test_units_and_task_order():
    t = generic.load(TASKS, **TASKS_OPTS)
    j7 = t.frame[t.frame["job_id"] == 7].sort_values("task_id")
    assert list(j7["runtime_s"]) == [1.5, 2.5, 0.5]  # task ids in file order within job 7
    assert list(j7["submit_s"]) == [0.0, 0.0, 0.5]
    assert _task(t, 8)["mem_gib"] == pytest.approx(16e9 / 2**30)  # MB are decimal
    assert _task(t, 8)["job_name"] == "ben"  # no job name column: the user
    assert 9 not in set(t.frame["job_id"])  # runtime 0


def test_parquet_copy_reads_the_same(tmp_path):
    path = tmp_path / "tasks.parquet"
    pd.read_csv(TASKS).to_parquet(path)
    assert generic.load(path, **TASKS_OPTS).frame.equals(generic.load(TASKS, **TASKS_OPTS).frame)


@pytest.mark.parametrize("unit, factor", [("s", 1), ("ms", 1e-3), ("us", 1e-6), ("min", 60),
                                          ("h", 3600)])
def test_time_units(tmp_path, unit, factor):
    path = tmp_path / "t.csv"
    path.write_text("j,s,r,c,m\n1,10,20,1,1\n")
    t = generic.load(path, job_id="j", submit_s="s", runtime_s="r", cpu="c", mem_gib="m",
                     time_unit=unit)
    assert t.frame["runtime_s"].iloc[0] == pytest.approx(20 * factor)
    assert t.meta["origin_s"] == pytest.approx(10 * factor)


@pytest.mark.parametrize("unit, gib", [("GiB", 1.0), ("GB", 1e9 / 2**30), ("MiB", 1 / 1024),
                                       ("MB", 1e6 / 2**30), ("KiB", 1 / 2**20),
                                       ("KB", 1e3 / 2**30)])
def test_memory_units(tmp_path, unit, gib):
    path = tmp_path / "t.csv"
    path.write_text("j,s,r,c,m\n1,0,5,1,3\n")
    t = generic.load(path, job_id="j", submit_s="s", runtime_s="r", cpu="c", mem_gib="m",
                     mem_unit=unit)
    assert t.frame["mem_gib"].iloc[0] == pytest.approx(3 * gib)


# --- mistakes in the mapping are ConfigErrors naming the option ---------------------------


@pytest.mark.parametrize("opts, words", [
    ({"cpu": "CPUs"}, ["cpu='CPUs'", "no column 'CPUs'"]),
    ({"user": "Owner"}, ["user='Owner'", "no column"]),
    ({"end_column": "Finish"}, ["end_column='Finish'"]),
    ({"time_unit": "days"}, ["time_unit", "s, ms, us, min, h"]),
    ({"mem_unit": "TB"}, ["mem_unit"]),
    ({"submit_format": "epoch"}, ["submit_format"]),
    ({"colour": "x"}, ["unknown option 'colour'"]),
    ({"cpu": ""}, ["'cpu' is empty"]),
])
def test_bad_mapping(opts, words):
    with pytest.raises(ConfigError) as exc:
        _sacct(**opts)
    for w in words:
        assert w in str(exc.value)


def test_incomplete_or_contradictory_mapping(tmp_path):
    with pytest.raises(ConfigError, match="map the column.*cpu"):
        generic.load(TASKS, job_id="job", submit_s="submit_ms", runtime_s="duration_ms",
                     mem_gib="mem_mb")
    with pytest.raises(ConfigError, match="runtime_s \\(or end_column\\)"):
        generic.load(TASKS, job_id="job", submit_s="submit_ms", cpu="cores", mem_gib="mem_mb")
    with pytest.raises(ConfigError, match="not both"):
        _sacct(runtime_s="NCPUS")
    with pytest.raises(ConfigError, match="start_column needs end_column"):
        generic.load(TASKS, **TASKS_OPTS, start_column="submit_ms")


def test_bad_mapping_files(tmp_path):
    bad_json = tmp_path / "m.json"
    bad_json.write_text("{not json")
    with pytest.raises(ConfigError, match="mapping.*cannot read"):
        generic.load(SACCT, mapping=str(bad_json))
    with pytest.raises(ConfigError, match="mapping"):
        generic.load(SACCT, mapping=str(tmp_path / "absent.json"))
    wrong = tmp_path / "w.json"
    wrong.write_text(json.dumps({"job": "JobIDRaw"}))
    with pytest.raises(ConfigError, match="unknown key 'job'"):
        generic.load(SACCT, mapping=str(wrong))
    wrong.write_text(json.dumps({"cpu": 4}))
    with pytest.raises(ConfigError, match="key 'cpu' must be a string"):
        generic.load(SACCT, mapping=str(wrong))


# --- text job ids (Slurm array ids) ------------------------------------------------------

SLURM = ("JobID,Submit,Elapsed,NCPUS,Mem\n124,30,100,1,1\n123_4,0,600,2,4\n"
         "123_5,10,0,2,4\n124,40,200,1,1\n 123_6 ,20,50,1,1\n")
SLURM_OPTS = {"job_id": "JobID", "submit_s": "Submit", "runtime_s": "Elapsed", "cpu": "NCPUS",
              "mem_gib": "Mem"}


def test_slurm_array_ids_are_numbered_in_order_of_first_appearance(tmp_path):
    path = tmp_path / "slurm.csv"
    path.write_text(SLURM)
    t = generic.load(path, **SLURM_OPTS)
    f = t.frame
    pairs = dict(zip(f["source_job_id"], f["job_id"]))
    # file order: 124 first, then 123_4, 123_5 (dropped: runtime 0, but numbered), 123_6
    assert pairs == {"124": 0, "123_4": 1, "123_6": 3}
    assert list(f.loc[f["job_id"] == 0, "task_id"]) == [0, 1]  # 124's two rows: one job
    assert t.n_jobs == 3
    assert set(f["job_name"]) == {"job-124", "job-123_4", "job-123_6"}
    note = t.meta["load_report"]["notes"][0]
    assert "'123_4' is not a number" in note and "source_job_id" in note
    again = generic.load(path, **SLURM_OPTS)
    assert again.frame.equals(f)  # deterministic


def test_text_ids_in_parquet_and_a_canonical_copy(tmp_path):
    path = tmp_path / "slurm.csv"
    path.write_text(SLURM)
    pq = tmp_path / "slurm.parquet"
    pd.read_csv(path, dtype={"JobID": str}).to_parquet(pq)
    assert generic.load(pq, **SLURM_OPTS).frame.equals(generic.load(path, **SLURM_OPTS).frame)
    canon = tmp_path / "canon.parquet"
    generic.load(path, **SLURM_OPTS).to_parquet(canon)
    assert list(Trace.from_parquet(canon).frame["source_job_id"]) == ["123_4", "123_6", "124",
                                                                     "124"]


def test_numeric_ids_are_kept_as_they_are(tmp_path):
    t = generic.load(TASKS, **TASKS_OPTS)
    assert not t.has("source_job_id") and 7 in set(t.frame["job_id"])


@pytest.mark.parametrize("body, words", [
    ("a_1,0,5,1,1\n,1,5,1,1\n", ["t.csv:3", "'JobID' (job_id)", "empty"]),
    ("a_1,0,5,1,1\n   ,1,5,1,1\n", ["t.csv:3", "'JobID' (job_id)", "empty"]),
])
def test_text_ids_must_not_be_empty(tmp_path, body, words):
    path = tmp_path / "t.csv"
    path.write_text("JobID,Submit,Elapsed,NCPUS,Mem\n" + body)
    with pytest.raises(TraceError) as exc:
        generic.load(path, **SLURM_OPTS)
    assert all(w in str(exc.value) for w in words), str(exc.value)


def test_duplicate_task_names_the_source_id(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("j,t,s,r,c,m\n123_4,0,0,5,1,1\n123_4,0,3,5,1,1\n")
    with pytest.raises(TraceError, match=r"t\.csv:3: duplicate \(job_id, task_id\) = "
                                          r"\('123_4', 0\), first on line 2"):
        generic.load(path, job_id="j", task_id="t", submit_s="s", runtime_s="r", cpu="c",
                     mem_gib="m")


def test_source_ids_must_name_one_job_each():
    from tests.helpers.trace import make_trace

    frame = make_trace([(0, 0, 0.0, 5.0, 1.0, 1.0), (1, 0, 1.0, 5.0, 1.0, 1.0)]).frame
    with pytest.raises(TraceError, match="source_job_id 'a' has more than one job_id"):
        Trace(frame.assign(source_job_id=["a", "a"]))
    with pytest.raises(TraceError, match="job_id 0 has more than one source_job_id"):
        Trace(frame.assign(job_id=[0, 0], task_id=[0, 1], source_job_id=["a", "b"]))
    assert len(Trace(frame.assign(source_job_id=["a", "b"]))) == 2


# --- bad data is a TraceError naming line/row and column --------------------------------


def _one_bad(tmp_path: Path, row: str) -> str:
    path = tmp_path / "t.csv"
    path.write_text("job,submit_ms,duration_ms,cores,mem_mb,owner\n7,0,10,1,1,a\n" + row + "\n")
    with pytest.raises(TraceError) as exc:
        generic.load(path, **TASKS_OPTS)
    assert str(exc.value).startswith(f"{path}:3: ")
    return str(exc.value)


@pytest.mark.parametrize("row, words", [
    ("7,0,ten,1,1,a", ["'duration_ms' (runtime_s)", "'ten'"]),
    ("7.5,0,10,1,1,a", ["'job' (job_id)", "integer"]),
    ("8,0,10,-1,1,a", ["'cores' (cpu)", ">= 0"]),
    ("8,,10,1,1,a", ["'submit_ms' (submit_s)", "empty"]),
    ("8,0,10,1,inf,a", ["'mem_mb' (mem_gib)", "not finite"]),
])
def test_bad_values(tmp_path, row, words):
    msg = _one_bad(tmp_path, row)
    for w in words:
        assert w in msg


def test_row_requesting_nothing_is_dropped(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job,submit_ms,duration_ms,cores,mem_mb,owner\n7,0,10,1,1,a\n8,0,10,0,0,b\n")
    t = generic.load(path, **TASKS_OPTS)
    assert list(t.frame["job_id"]) == [7]
    assert t.meta["load_report"]["dropped"] == {"rows requesting no cpu and no memory": 1}


def test_duplicate_task_names_both_lines(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("j,t,s,r,c,m\n1,0,0,5,1,1\n1,1,0,5,1,1\n1,0,3,5,1,1\n")
    with pytest.raises(TraceError, match=r"t\.csv:4: duplicate \(job_id, task_id\) = "
                                          r"\(1, 0\), first on line 2"):
        generic.load(path, job_id="j", task_id="t", submit_s="s", runtime_s="r", cpu="c",
                     mem_gib="m")


def test_iso_errors_and_partial_estimates(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("j,s,e,c,m,l\n1,2023-01-01T00:00:00,2023-01-01T00:01:00,1,1,5\n"
                    "2,2023-01-01T00:00:00,2023-01-01 00:02:00+00:00,1,1,\n")
    opts = {"job_id": "j", "submit_s": "s", "end_column": "e", "cpu": "c", "mem_gib": "m",
            "estimate_s": "l", "submit_format": "iso"}
    t = generic.load(path, **opts)
    assert list(t.frame["runtime_s"]) == [60.0, 120.0]
    assert not t.has("estimate_s")
    assert any("estimate_s omitted: 1 of 2" in n for n in t.meta["load_report"]["notes"])
    path.write_text("j,s,e,c,m,l\n1,2023-01-01T00:00:00,soon,1,1,5\n")
    with pytest.raises(TraceError, match=r"t\.csv:2: column 'e' \(end_column\): not an ISO"):
        generic.load(path, **opts)


def test_deadlines_share_the_submit_origin(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("j,s,r,c,m,d\n1,100,5,1,1,200\n2,150,5,1,1,400\n")
    t = generic.load(path, job_id="j", submit_s="s", runtime_s="r", cpu="c", mem_gib="m",
                     deadline_s="d")
    assert list(t.frame["deadline_s"]) == [100.0, 300.0]


def test_parquet_bad_value_names_row(tmp_path):
    frame = pd.read_csv(TASKS, dtype={"cores": str})
    frame.loc[3, "cores"] = "many"
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    with pytest.raises(TraceError, match=r"t\.parquet: row 3: column 'cores' \(cpu\)"):
        generic.load(path, **TASKS_OPTS)


def test_unreadable_files(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        generic.load(tmp_path / "absent.csv", **TASKS_OPTS)
    empty = tmp_path / "e.csv"
    empty.write_text("")
    with pytest.raises(TraceError, match=r"e\.csv:1: empty file"):
        generic.load(empty, **TASKS_OPTS)
    header_only = tmp_path / "h.csv"
    header_only.write_text("job,submit_ms,duration_ms,cores,mem_mb,owner\n")
    with pytest.raises(TraceError, match="no usable rows"):
        generic.load(header_only, **TASKS_OPTS)
    junk = tmp_path / "j.parquet"
    junk.write_bytes(np.random.default_rng(0).bytes(300))
    with pytest.raises(TraceError, match=r"j\.parquet: cannot read as Parquet"):
        generic.load(junk, **TASKS_OPTS)


# --- fuzzing --------------------------------------------------------------------------

KINDS = ("flip", "truncate", "garbage_line", "drop_field", "extra_field", "non_utf8",
         "dup_line", "blank_line", "text_field")
OPS = ops(KINDS)


def _only_trace_or_trace_error(path: Path, **options) -> None:
    """A corrupted file gives a Trace or a TraceError. A ConfigError is right only when the
    damage hit the header so that a mapped column is gone: the mapping names a missing
    column."""
    try:
        t = generic.load(path, **options)
    except TraceError:
        return
    except ConfigError as exc:
        assert "has no column" in str(exc)
        return
    assert isinstance(t, Trace) and len(t) > 0


@pytest.mark.slow
@settings(max_examples=60)
@given(ops=OPS)
def test_fuzz_sacct_csv(tmp_path_factory, ops):
    path = tmp_path_factory.mktemp("generic") / "f.csv"
    path.write_bytes(corrupt(SACCT.read_bytes(), ops))
    _only_trace_or_trace_error(path, mapping=str(SACCT_MAP))


@pytest.mark.slow
@settings(max_examples=80)
@given(ops=OPS)
def test_fuzz_numeric_csv(tmp_path_factory, ops):
    path = tmp_path_factory.mktemp("generic") / "f.csv"
    path.write_bytes(corrupt(TASKS.read_bytes(), ops))
    _only_trace_or_trace_error(path, **TASKS_OPTS)


@pytest.mark.slow
@settings(max_examples=80)
@given(ops=st.lists(st.tuples(st.sampled_from(("flip", "truncate", "random")),
                              st.integers(0, 10**6), st.binary(min_size=1, max_size=64)),
                    min_size=1, max_size=3))
def test_fuzz_parquet(tmp_path_factory, ops):
    base = tmp_path_factory.getbasetemp() / "tasks.parquet"
    if not base.exists():
        pd.read_csv(TASKS).to_parquet(base)
    data = base.read_bytes()
    for kind, pos, junk in ops:
        at = pos % max(len(data), 1)
        if kind == "flip" and data:
            data = data[:at] + bytes([data[at] ^ (junk[0] or 0x01)]) + data[at + 1:]
        elif kind == "truncate":
            data = data[:at]
        else:
            data = data[:at] + junk + data[at + len(junk):]
    path = tmp_path_factory.mktemp("genericpq") / "f.parquet"
    path.write_bytes(data)
    _only_trace_or_trace_error(path, **TASKS_OPTS)
