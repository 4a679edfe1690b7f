"""The UMass/LSF loader (traces/umass.py) on small tables in the simulator's column layout,
as CSV, CSV.gz, Parquet and HDF5, and corrupted copies of them."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stratus.base.errors import ConfigError, TraceError
from stratus.traces import umass
from stratus.traces.loaders import load_file
from stratus.traces.schema import Trace
from tests.helpers.corrupt import corrupt, ops
from tests.helpers.paths import FIXTURES

FIX = FIXTURES / "umass"
CSV = FIX / "jobs.csv"
HEADER = ("userid,wallclock_runtime_sec,wallclock_limit_sec,num_cores,total_MB_req,status,time,"
          "job_id")
ORIGIN = 1_451_606_400  # 2016-01-01 00:00:00 UTC, job 101's submit


def _write(tmp_path: Path, *rows: str, name: str = "t.csv", header: str = HEADER) -> Path:
    path = tmp_path / name
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def _row(trace: Trace, job: int) -> dict:
    f = trace.frame
    return f[f["job_id"] == job].iloc[0].to_dict()


# --- the fixture in every container -----------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["jobs.csv", "jobs.csv.gz", "jobs.pq", "jobs.h5",
                                  "jobs_datetime.csv"])
def test_every_container_gives_the_same_trace(name):
    t = umass.load(FIX / name)
    ref = umass.load(CSV)
    assert t.name == name
    assert t.frame.equals(ref.frame)
    assert t.meta["origin_unix_s"] == ORIGIN
    assert t.meta["load_report"]["dropped"] == ref.meta["load_report"]["dropped"]


def test_mapping_of_one_job():
    j = _row(umass.load(CSV), 101)
    assert (j["submit_s"], j["runtime_s"], j["cpu"], j["estimate_s"]) == (0.0, 3600, 4, 7200)
    assert j["mem_gib"] == 8.0  # 8192 MB taken as MiB
    assert (j["user"], j["job_name"], j["task_id"], j["priority"]) == ("alice", "alice", 0, 0)


def test_rows_out_of_order_are_sorted():
    t = umass.load(CSV)
    assert list(t.frame["job_id"]) == [101, 106, 104, 102, 105, 107]
    assert t.frame["submit_s"].is_monotonic_increasing
    assert _row(t, 106)["user"] == "1001"  # a numeric userid is text, not 1001.0
    assert _row(t, 106)["mem_gib"] == 0.0


def test_resubmission_keeps_the_last_and_runtime_zero_is_dropped():
    t = umass.load(CSV)
    rep = t.meta["load_report"]
    assert rep["rows_read"] == 8
    assert rep["dropped"] == {
        "resubmitted (an earlier submission of a job_id seen again later)": 1,
        "jobs with wallclock_runtime_sec <= 0": 1,  # job 103
    }
    j = _row(t, 104)  # EXIT at 00:10, requeued, DONE at 01:20
    assert (j["submit_s"], j["runtime_s"]) == (4800.0, 1800)
    assert 103 not in set(t.frame["job_id"])
    assert t.meta["status_counts"] == {"DONE": 5, "EXIT": 1}
    assert "kept jobs by status: DONE: 5, EXIT: 1" in rep["notes"]


def test_resubmission_order_is_by_time_not_by_line(tmp_path):
    path = _write(tmp_path, "a,50,0,1,1,DONE,200,1", "a,10,0,1,1,EXIT,100,1")
    t = umass.load(path)
    assert len(t) == 1 and _row(t, 1)["runtime_s"] == 50  # the later submission (t=200)


def test_window_excludes_the_job_that_crosses_it():
    t = umass.load(CSV)
    inside = t.window(0, 4 * 3600, inside=True)
    assert sorted(inside.frame["job_id"]) == [101, 102, 104, 106]  # 105 ends at 17,800 s
    crossing = t.window(0, 4 * 3600, inside=False)
    assert sorted(crossing.frame["job_id"]) == [101, 102, 104, 105, 106]


def test_status_option_filters_and_counts():
    t = umass.load(CSV, status="done")
    assert sorted(t.frame["job_id"]) == [101, 104, 105, 106, 107]
    # 102 and 103 are EXIT; 103 (runtime 0) goes to the status filter first
    assert t.meta["load_report"]["dropped"] == {
        "resubmitted (an earlier submission of a job_id seen again later)": 1,
        "jobs whose status is not DONE": 2}
    both = load_file(CSV, "umass?status=DONE,EXIT")
    assert len(both) == 6
    assert both.meta["origin_unix_s"] == t.meta["origin_unix_s"] == ORIGIN  # same time axis


def test_estimates_omitted_when_some_limit_is_missing(tmp_path):
    path = _write(tmp_path, "a,50,100,1,1,DONE,200,1", "a,10,0,1,1,DONE,100,2",
                  "a,10,,1,1,DONE,100,3")
    t = umass.load(path)
    assert not t.has("estimate_s")
    assert any("estimate_s omitted: 2 of 3" in n for n in t.meta["load_report"]["notes"])


def test_job_requesting_nothing_is_dropped(tmp_path):
    t = umass.load(_write(tmp_path, "a,50,0,0,0,EXIT,200,1", "a,50,0,1,0,DONE,300,2"))
    assert list(t.frame["job_id"]) == [2]
    assert t.meta["load_report"]["dropped"] == {"jobs requesting no cores and no memory": 1}


def test_extra_columns_and_blank_lines_are_reported(tmp_path):
    path = _write(tmp_path, "a,50,100,1,1,DONE,200,1,x", "", "a,10,10,1,1,DONE,100,2,y",
                  header=HEADER + ",queue")
    t = umass.load(path)
    rep = t.meta["load_report"]
    assert len(t) == 2 and rep["dropped"] == {"blank or all-empty rows": 1}
    assert "ignored columns: queue" in rep["notes"]


# --- HDF5 keys and options -------------------------------------------------------------


@pytest.mark.slow
def test_hdf5_key_option(tmp_path):
    frame = pd.read_csv(CSV, dtype={"userid": str, "status": str}).astype(
        {"userid": object, "status": object})
    path = tmp_path / "two.h5"
    frame.to_hdf(path, key="jobs", mode="w")
    frame.head(2).to_hdf(path, key="other")
    with pytest.raises(ConfigError, match="several datasets.*key="):
        umass.load(path)
    assert len(umass.load(path, key="/other")) == 2
    with pytest.raises(TraceError, match="no HDF5 dataset 'nope'"):
        umass.load(path, key="nope")


@pytest.mark.parametrize("opts, word", [({"key": "jobs"}, "HDF5 files only"),
                                        ({"stat": "DONE"}, "stat"),
                                        ({"status": " , "}, "status")])
def test_bad_options(opts, word):
    with pytest.raises(ConfigError, match=word):
        umass.load(CSV, **opts)


# --- bad values name the line (CSV) or row (Parquet) and the field -------------------------


@pytest.mark.parametrize("row, where", [
    ("a,50,0,four,1,DONE,200,1", "column 'num_cores': not a number: 'four'"),
    ("a,50,0,-1,1,DONE,200,1", "column 'num_cores': must be >= 0"),
    ("a,fifty,0,1,1,DONE,200,1", "column 'wallclock_runtime_sec': not a number"),
    ("a,inf,0,1,1,DONE,200,1", "column 'wallclock_runtime_sec': not finite"),
    ("a,50,0,1,1,DONE,yesterday,1", "column 'time': not a number or an ISO datetime"),
    ("a,50,0,1,1,DONE,2016-13-45 00:00:00,1", "column 'time'"),
    ("a,50,0,1,1,DONE,,1", "column 'time': empty"),
    ("a,50,0,1,1,DONE,200,1.5", "column 'job_id': not an integer"),
    (",50,0,1,1,DONE,200,1", "column 'userid': empty"),
    ("a,50,0,1,NA,DONE,200,1", "column 'total_MB_req': not a number: 'NA'"),
])
def test_bad_value_names_line_and_field(tmp_path, row, where):
    path = _write(tmp_path, "ok,10,0,1,1,DONE,100,9", row)
    with pytest.raises(TraceError) as exc:
        umass.load(path)
    assert str(exc.value).startswith(f"{path}:3: ")
    assert where in str(exc.value)


def test_missing_column_is_named(tmp_path):
    path = _write(tmp_path, "a,50,0,1,DONE,200,1",
                  header=HEADER.replace(",total_MB_req", ""))
    with pytest.raises(TraceError, match="missing required column.*total_MB_req"):
        umass.load(path)


def test_ragged_and_non_utf8_csv_lines(tmp_path):
    ragged = _write(tmp_path, "a,50,0,1,1,DONE,200,1", "a,50,0,1,1,DONE,200,2,9,9")
    with pytest.raises(TraceError, match=r"t\.csv:3: malformed CSV"):
        umass.load(ragged)
    bad = tmp_path / "u.csv"
    bad.write_bytes((HEADER + "\na,50,0,1,1,DONE,200,1\n\xe9,5,0,1,1,DONE,2,2\n")
                    .encode("latin-1"))
    with pytest.raises(TraceError, match=r"u\.csv:3: not valid UTF-8"):
        umass.load(bad)


def test_parquet_bad_value_names_the_row(tmp_path):
    frame = pd.read_csv(CSV, dtype=str)
    frame.loc[5, "num_cores"] = "lots"
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path)
    with pytest.raises(TraceError, match=r"bad\.parquet: row 5: column 'num_cores'"):
        umass.load(path)


@pytest.mark.slow
def test_unreadable_containers(tmp_path):
    for name in ("x.parquet", "x.h5"):
        path = tmp_path / name
        path.write_bytes(b"not a container at all")
        with pytest.raises(TraceError, match=name.replace(".", r"\.")):
            umass.load(path)
    gz = tmp_path / "cut.csv.gz"
    gz.write_bytes((FIX / "jobs.csv.gz").read_bytes()[:-20])
    with pytest.raises(TraceError, match="cut.csv.gz"):
        umass.load(gz)


def test_hdf5_reader_crash_is_a_trace_error(monkeypatch, tmp_path):
    # The HDF5 C library can die with SIGSEGV on a damaged file (flipping one bit of
    # jobs.h5 did it); the loader reads HDF5 in a child process, so a crash becomes a
    # TraceError. Simulate the crash so the test does not depend on the fixture's bytes.
    crash = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    monkeypatch.setattr(umass, "_HDF_CHILD", crash)  # the reader as a new interpreter
    monkeypatch.setattr(umass, "_hdf_read_into", lambda *a: exec(crash))  # as a fork
    with pytest.raises(TraceError, match=r"jobs\.h5: the HDF5 library crashed"):
        umass.load(FIX / "jobs.h5")


def test_the_hdf5_reader_is_not_forked_while_another_thread_runs(monkeypatch):
    """A fork copies the locks other threads hold and could hang on one: with a second
    thread alive (a progress bar's) the reader is a new interpreter, and reads alike."""
    import threading

    forked = []
    real = umass._run_forked
    monkeypatch.setattr(umass, "_run_forked", lambda *a: forked.append(1) or real(*a))
    alone = umass.load(FIX / "jobs.h5")
    assert forked == [1] or sys.platform != "linux"
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        beside = umass.load(FIX / "jobs.h5")
    finally:
        stop.set()
        other.join()
    assert forked == [1] or sys.platform != "linux"
    pd.testing.assert_frame_equal(alone.frame, beside.frame)


def test_only_dropped_jobs_is_an_error(tmp_path):
    with pytest.raises(TraceError, match="no usable jobs.*<= 0"):
        umass.load(_write(tmp_path, "a,0,0,1,1,DONE,200,1"))


# --- fuzzing --------------------------------------------------------------------------

KINDS = ("flip", "truncate", "garbage_line", "drop_field", "extra_field", "non_utf8",
         "dup_line", "blank_line", "text_field")
OPS = ops(KINDS)


def _only_trace_or_trace_error(path: Path) -> None:
    try:
        t = umass.load(path)
    except TraceError:
        return
    assert isinstance(t, Trace) and len(t) > 0


@pytest.mark.slow
@settings(max_examples=120)
@given(ops=OPS)
def test_fuzz_csv(tmp_path_factory, ops):
    path = tmp_path_factory.mktemp("umass") / "f.csv"
    path.write_bytes(corrupt(CSV.read_bytes(), ops))
    _only_trace_or_trace_error(path)


@pytest.mark.slow
@settings(max_examples=60)
@given(ops=st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 10**6),
                              st.binary(min_size=1, max_size=6)), max_size=2),
       cut=st.one_of(st.none(), st.integers(0, 400)),
       flip=st.one_of(st.none(), st.integers(0, 400)))
def test_fuzz_csv_gz(tmp_path_factory, ops, cut, flip):
    gz = bytearray(gzip.compress(corrupt(CSV.read_bytes(), ops), mtime=0))
    if flip is not None:
        gz[flip % len(gz)] ^= 0x41
    if cut is not None:
        gz = gz[: cut % len(gz)]
    path = tmp_path_factory.mktemp("umassgz") / "f.csv.gz"
    path.write_bytes(bytes(gz))
    _only_trace_or_trace_error(path)


BINARY_OPS = st.lists(st.tuples(st.sampled_from(("flip", "truncate", "random")),
                                st.integers(0, 10**7), st.binary(min_size=1, max_size=64)),
                      min_size=1, max_size=3)


def corrupt_binary(data: bytes, ops: list[tuple[str, int, bytes]]) -> bytes:
    """Byte flips, truncation or a run of random bytes written over the file."""
    for kind, pos, junk in ops:
        at = pos % max(len(data), 1)
        if kind == "flip" and data:
            data = data[:at] + bytes([data[at] ^ (junk[0] or 0x01)]) + data[at + 1:]
        elif kind == "truncate":
            data = data[:at]
        elif kind == "random":
            data = data[:at] + junk + data[at + len(junk):]
    return data


@pytest.mark.slow
@settings(max_examples=60)
@given(ops=BINARY_OPS)
def test_fuzz_parquet(tmp_path_factory, ops):
    path = tmp_path_factory.mktemp("umasspq") / "f.parquet"
    path.write_bytes(corrupt_binary((FIX / "jobs.pq").read_bytes(), ops))
    _only_trace_or_trace_error(path)


# Each HDF5 load starts a reader process (see traces/umass.py), so few examples; damaged
# HDF5 files used to crash this test process with SIGSEGV before the reader was isolated.
@pytest.mark.slow
@settings(max_examples=3)
@given(ops=BINARY_OPS)
@example(ops=[("flip", 112, b"\x80")])  # crashed PyTables in-process (SIGSEGV)
def test_fuzz_hdf5(tmp_path_factory, ops):
    path = tmp_path_factory.mktemp("umassh5") / "f.h5"
    path.write_bytes(corrupt_binary((FIX / "jobs.h5").read_bytes(), ops))
    _only_trace_or_trace_error(path)
