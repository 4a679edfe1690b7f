"""The SWF 2.2 loader (traces/swf.py) on a hand-made log, the real NASA iPSC log and
corrupted copies of both."""

from __future__ import annotations

import gzip
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.base.errors import ConfigError, TraceError
from stratus.traces import swf
from stratus.traces.loaders import load_file
from stratus.traces.schema import Trace
from tests.helpers.corrupt import corrupt, ops
from tests.helpers.paths import TESTS

HERE = TESTS
SMALL = HERE / "fixtures" / "swf" / "small.swf"
NASA = HERE / "data" / "NASA-iPSC-1993-3.1-cln.swf.gz"
LINE = "{job} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 3 1 2 1 1 -1 -1"


def _write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _jobs(*lines: str) -> str:
    return "; Version: 2.2\n" + "\n".join(lines) + "\n"


def _row(trace: Trace, job: int) -> dict:
    f = trace.frame
    return f[f["job_id"] == job].iloc[0].to_dict()


# --- the hand-made log ----------------------------------------------------------------


def test_small_log_maps_every_field():
    t = swf.load(SMALL)
    assert t.name == "small.swf"
    assert sorted(t.frame["job_id"]) == [1, 2, 4, 5]  # job 3 has run time -1
    j1 = _row(t, 1)
    assert j1["submit_s"] == 0 and j1["runtime_s"] == 100 and j1["cpu"] == 4
    assert j1["mem_gib"] == pytest.approx(4 * 1024 / 2**20)  # used memory, KB per processor
    assert j1["estimate_s"] == 200
    assert (j1["user"], j1["job_name"], j1["queue"], j1["priority"]) == ("u7", "app-3", "q1", 0)
    j2 = _row(t, 2)
    assert j2["runtime_s"] == 1.0  # run time 0 raised to min_runtime_s
    assert j2["mem_gib"] == 4.0  # no memory data: 4 GiB per processor
    j4 = _row(t, 4)
    assert j4["cpu"] == 2  # allocated -1: the requested processors
    assert j4["mem_gib"] == pytest.approx(2 * 0.5)  # requested 524288 KB = 0.5 GiB per processor
    j5 = _row(t, 5)
    assert (j5["user"], j5["job_name"], j5["queue"]) == ("unknown", "job-5", "")
    assert j5["cpu"] == 16 and j5["mem_gib"] == 64.0 and j5["estimate_s"] == 7200


def test_small_log_report_and_header():
    t = swf.load(SMALL)
    rep = t.meta["load_report"]
    assert rep["rows_read"] == 5
    assert rep["dropped"] == {"jobs with run time missing (-1)": 1}
    assert any("raised to 1 s: 1 jobs" in n for n in rep["notes"])
    assert t.meta["swf_status_counts"] == {"0 (failed)": 1, "1 (completed)": 3}
    h = t.meta["swf_header"]
    assert h["UnixStartTime"] == 1_000_000_000 and h["MaxProcs"] == 64 and h["MaxNodes"] == 16
    assert h["TimeZoneString"] == "UTC"
    assert h["Queue"] == ["1 batch", "2 debug"]
    assert h["Note"].endswith("(it asked for 2 processors)")  # continuation line joined
    assert t.meta["origin_unix_s"] == 1_000_000_000


def test_per_processor_splits_into_one_vcpu_tasks():
    t = swf.load(SMALL, per_processor="1")
    assert len(t) == 4 + 1 + 2 + 16
    assert set(t.frame["cpu"]) == {1.0}
    j5 = t.frame[t.frame["job_id"] == 5]
    assert sorted(j5["task_id"]) == list(range(16))
    assert np.allclose(j5["mem_gib"], 4.0)
    j1 = t.frame[t.frame["job_id"] == 1]
    assert np.allclose(j1["mem_gib"], 1024 / 2**20)
    # the job's total is unchanged by splitting it
    whole = swf.load(SMALL)
    assert t.frame["mem_gib"].sum() == pytest.approx(whole.frame["mem_gib"].sum())


def test_options_change_defaults():
    t = swf.load(SMALL, min_runtime_s="5", mem_per_proc_gib="2")
    assert _row(t, 2)["runtime_s"] == 5.0
    assert _row(t, 5)["mem_gib"] == 32.0


@pytest.mark.parametrize("opts, word", [
    ({"per_proc": "1"}, "per_proc"),
    ({"per_processor": "maybe"}, "per_processor"),
    ({"min_runtime_s": "0"}, "min_runtime_s"),
    ({"min_runtime_s": "x"}, "min_runtime_s"),
    ({"mem_per_proc_gib": "-1"}, "mem_per_proc_gib"),
    ({"mem_per_proc_gib": "nan"}, "mem_per_proc_gib"),
    ({"mem_per_proc_gib": ""}, "mem_per_proc_gib"),
])
def test_bad_options_are_config_errors(opts, word):
    with pytest.raises(ConfigError, match=word):
        swf.load(SMALL, **opts)


def test_registry_passes_string_options():
    t = load_file(SMALL, "swf?per_processor=true&min_runtime_s=2")
    assert len(t) == 23 and _row(t, 2)["runtime_s"] == 2.0


def test_gzip_is_read_like_plain(tmp_path):
    gz = tmp_path / "small.swf.gz"
    gz.write_bytes(gzip.compress(SMALL.read_bytes()))
    a, b = swf.load(SMALL).frame, swf.load(gz).frame
    assert a.equals(b)


def test_estimates_kept_only_when_every_job_has_one(tmp_path):
    path = _write(tmp_path, _jobs(LINE.format(job=1, submit=0, run=5, procs=1, req=10),
                                  LINE.format(job=2, submit=1, run=5, procs=1, req=-1)))
    t = swf.load(path)
    assert not t.has("estimate_s")
    assert any("estimate_s omitted: 1 of 2" in n for n in t.meta["load_report"]["notes"])


# --- errors name the file, the line and the field -----------------------------------------


@pytest.mark.parametrize("bad, words", [
    ("1 0 -1 5 1 -1 -1 1 -1 -1 1 3 1 2 1 1 -1", ["expected 18 fields, found 17"]),
    ("1 0 -1 5 1 -1 -1 1 -1 -1 1 3 1 2 1 1 -1 -1 0", ["found 19"]),
    ("1 0 -1 five 1 -1 -1 1 -1 -1 1 3 1 2 1 1 -1 -1", ["field 4 (run time)", "'five'"]),
    ("1 0 -1 nan 1 -1 -1 1 -1 -1 1 3 1 2 1 1 -1 -1", ["field 4 (run time)", "finite"]),
    ("1 0 -1 1_0 1 -1 -1 1 -1 -1 1 3 1 2 1 1 -1 -1", ["field 4", "'1_0'"]),
    ("1 0 -1 5 2.5 -1 -1 1 -1 -1 1 3 1 2 1 1 -1 -1", ["field 5 (allocated processors)", "whole"]),
    ("-1 0 -1 5 1 -1 -1 1 -1 -1 1 3 1 2 1 1 -1 -1", ["field 1 (job number)"]),
    ("1 0 -1 5 1 -1 -1 1 -1 -1 1 3 1 2 1 1 -1 \u00e9", ["non-ASCII"]),
])
def test_malformed_line_names_it(tmp_path, bad, words):
    path = _write(tmp_path, _jobs(LINE.format(job=7, submit=0, run=5, procs=1, req=9), bad))
    with pytest.raises(TraceError) as exc:
        swf.load(path)
    msg = str(exc.value)
    assert msg.startswith(f"{path}:3: ")
    for w in words:
        assert w in msg


def test_non_utf8_data_line(tmp_path):
    path = tmp_path / "t.swf"
    path.write_bytes(b"; x\n" + LINE.format(job=1, submit=0, run=5, procs=1, req=9).encode()
                     + b"\n2 0 -1 5 \xff 1\n")
    with pytest.raises(TraceError, match=r"t\.swf:3: not valid UTF-8"):
        swf.load(path)


def test_non_utf8_comment_is_noted_not_fatal(tmp_path):
    path = tmp_path / "t.swf"
    path.write_bytes(b"; Computer: Z\xfcrich\n"
                     + LINE.format(job=1, submit=0, run=5, procs=1, req=9).encode() + b"\n")
    t = swf.load(path)
    assert len(t) == 1
    assert any("not valid UTF-8" in n for n in t.meta["load_report"]["notes"])


def test_duplicate_job_numbers_name_both_lines(tmp_path):
    path = _write(tmp_path, _jobs(LINE.format(job=1, submit=0, run=5, procs=1, req=9),
                                  LINE.format(job=2, submit=1, run=5, procs=1, req=9),
                                  LINE.format(job=1, submit=2, run=5, procs=1, req=9)))
    with pytest.raises(TraceError, match=r"t\.swf:4: job number 1 already used on line 2"):
        swf.load(path)


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(TraceError, match="no job lines"):
        swf.load(_write(tmp_path, "; Version: 2.2\n;\n"))
    with pytest.raises(TraceError, match="no such file"):
        swf.load(tmp_path / "absent.swf")
    all_dropped = _write(tmp_path, _jobs(LINE.format(job=1, submit=0, run=-1, procs=1, req=9)),
                         "d.swf")
    with pytest.raises(TraceError, match="no usable jobs.*run time missing"):
        swf.load(all_dropped)


# --- the real log ---------------------------------------------------------------------

PACIFIC = {"PDT": timedelta(hours=-7), "PST": timedelta(hours=-8)}


def _header_time(text: str) -> float:
    """'Fri Oct 01 00:00:03 PDT 1993' -> Unix seconds."""
    day, mon, date, clock, zone, year = text.split()
    naive = datetime.strptime(f"{day} {mon} {date} {clock} {year}", "%a %b %d %H:%M:%S %Y")
    return naive.replace(tzinfo=timezone(PACIFIC[zone])).timestamp()


@pytest.fixture(scope="module")
def nasa() -> Trace:
    return swf.load(NASA)


@pytest.mark.slow
def test_nasa_log_loads_every_job(nasa):
    assert nasa.n_jobs == len(nasa) == 18_239
    rep = nasa.meta["load_report"]
    assert rep["rows_read"] == 18_239 and rep["dropped"] == {}
    assert any("raised to 1 s: 173 jobs" in n for n in rep["notes"])
    assert nasa.frame["cpu"].max() == 128 == nasa.meta["swf_header"]["MaxProcs"]
    assert nasa.meta["swf_header"]["MaxNodes"] == 128
    assert not nasa.has("estimate_s")  # the log has no requested times


@pytest.mark.slow
def test_nasa_span_matches_the_header(nasa):
    """The span is exactly the header's EndTime - StartTime, 7,949,022 s.

    Submit times count from UnixStartTime (= StartTime, the first job at 0), and EndTime is
    the end of the last job (42264: submit 7,948,936 + run 86 s). The header's wall-clock
    times differ by only 7,945,422 s: the clocks went back an hour at the PDT->PST change
    on 31 Oct 1993, so the real elapsed time is 3,600 s more."""
    h = nasa.meta["swf_header"]
    start, end = _header_time(h["StartTime"]), _header_time(h["EndTime"])
    assert start == h["UnixStartTime"] == 749_458_803
    assert end - start == 7_949_022
    f = nasa.frame
    ends = f["submit_s"] + f["runtime_s"]
    assert nasa.span_s == ends.max() - f["submit_s"].min() == 7_949_022
    assert f["submit_s"].min() == 0
    last = f.loc[ends.idxmax()]
    assert (last["job_id"], last["submit_s"], last["runtime_s"]) == (42264, 7_948_936, 86)


def _nasa_lines() -> list[bytes]:
    return gzip.decompress(NASA.read_bytes()).split(b"\n")


@pytest.mark.slow
def test_nasa_copy_with_one_malformed_line_names_it(tmp_path):
    lines = _nasa_lines()
    lineno = 9_000  # a data line (the header is 33 lines)
    assert not lines[lineno - 1].startswith(b";")
    lines[lineno - 1] = b" ".join(lines[lineno - 1].split()[:-1])  # drop the last field
    path = tmp_path / "nasa-bad.swf.gz"
    path.write_bytes(gzip.compress(b"\n".join(lines)))
    with pytest.raises(TraceError) as exc:
        swf.load(path)
    assert str(exc.value) == f"{path}:{lineno}: expected 18 fields, found 17"


def test_nasa_truncated_gzip_names_the_line(tmp_path):
    data = NASA.read_bytes()
    path = tmp_path / "nasa-cut.swf.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match=r"nasa-cut\.swf\.gz:\d+: cannot read the file past"):
        swf.load(path)


# --- fuzzing --------------------------------------------------------------------------

KINDS = ("flip", "truncate", "garbage_line", "drop_field", "extra_field", "non_utf8",
         "dup_line", "blank_line", "nan_field")
OPS = ops(KINDS)


def _only_trace_or_trace_error(path: Path) -> None:
    try:
        t = swf.load(path)
    except TraceError:
        return
    assert isinstance(t, Trace) and len(t) > 0
    assert (t.frame["runtime_s"] > 0).all()


@pytest.mark.slow
@settings(max_examples=75)
@given(ops=OPS)
def test_fuzz_plain(tmp_path_factory, ops):
    path = tmp_path_factory.mktemp("swf") / "f.swf"
    path.write_bytes(corrupt(SMALL.read_bytes(), ops, sep=None))
    _only_trace_or_trace_error(path)


@pytest.mark.slow
@settings(max_examples=100)
@given(ops=st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 10**6),
                              st.binary(min_size=1, max_size=6)), max_size=2),
       cut=st.one_of(st.none(), st.integers(0, 400)), flip=st.one_of(st.none(),
                                                                     st.integers(0, 400)))
def test_fuzz_gzip(tmp_path_factory, ops, cut, flip):
    gz = bytearray(gzip.compress(corrupt(SMALL.read_bytes(), ops, sep=None), mtime=0))
    if flip is not None:
        gz[flip % len(gz)] ^= 0x41
    if cut is not None:
        gz = gz[: cut % len(gz)]
    path = tmp_path_factory.mktemp("swfgz") / "f.swf.gz"
    path.write_bytes(bytes(gz))
    _only_trace_or_trace_error(path)
