"""Google cluster trace 2011 (v2.1) loader: semantics on a hand-made fixture, options,
malformed input, and Hypothesis fuzzing (corruption -> Trace or TraceError, never else).

The fixture (tests/fixtures/google2011/basic, built by make_fixture.py) has one job per rule;
its README lists them.
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.base.errors import ConfigError, TraceError
from stratus.traces import google2011 as g
from stratus.traces.loaders import convert_file, load_file
from stratus.traces.schema import REQUIRED, Trace, validate_frame
from tests.helpers.paths import DATA, FIXTURES

FIXTURE = FIXTURES / "google2011" / "basic"
WINDOW = {"window_start_s": "1500", "window_end_s": "20000"}
R = g.JOB_REASONS
DEFAULT_DROPS = {R[1]: 1, R[2]: 1, R[3]: 1, R[4]: 1, R[5]: 1, R[6]: 1, R[7]: 1,
                 g.TASK_REASONS[g.TASK_NEVER_SCHEDULED]: 1, g.TASK_REASONS[g.TASK_NO_REQUEST]: 1}
# job -> {task: (submit_s, runtime_s, cpu, mem_gib, user, job_name, priority)}, default options
EXPECTED = {
    100: {0: (1000, 100, 8, 16, "u1", "wordcount", 2), 1: (1000, 50, 16, 32, "u1", "wordcount", 2)},
    200: {0: (2000, 60, 32, 64, "u1", "jobB", 2)},
    400: {0: (4000, 30, 8, 16, "u1", "logical400", 9), 1: (4000, 10, 8, 16, "u1", "logical400", 9)},
    500: {0: (5000, 90, 8, 16, "u1", "logical500", 2)},
    700: {1: (7000, 10, 8, 16, "u1", "logical700", 2)},
    1000: {0: (10000, 90, 4, 8, "u2", "job-1000", 2)},
    1100: {0: (11000, 1e-6, 8, 16, "u1", "logical1100", 2)},
    1300: {0: (13000, 20, 8, 16, "u1", "job-1300", 2)},
    1500: {0: (15000, 30, 8, 16, "u1", "logical1500", 2)},
    1600: {0: (16000, 30, 8, 16, "u1", "logical1600", 2)},
    1800: {0: (19000, 1990, 8, 16, "u1", "logical1800", 2)},
}


@pytest.fixture(scope="module")
def trace() -> Trace:
    return g.load(FIXTURE)


def rows(tr: Trace) -> dict[tuple[int, int], tuple]:
    cols = ["submit_s", "runtime_s", "cpu", "mem_gib", "user", "job_name", "priority"]
    return {(r.job_id, r.task_id): tuple(getattr(r, c) for c in cols)
            for r in tr.frame.itertuples()}


def notes(tr: Trace) -> str:
    return "\n".join(tr.meta["load_report"]["notes"])


# --- semantics ---------------------------------------------------------------------------

def test_every_kept_row_matches_the_rules(trace):
    want = {(j, t): v for j, tasks in EXPECTED.items() for t, v in tasks.items()}
    got = rows(trace)
    assert set(got) == set(want)
    for key, values in want.items():
        assert got[key] == pytest.approx(values), key


def test_report_counts_every_drop(trace):
    rep = trace.meta["load_report"]
    assert rep["dropped"] == DEFAULT_DROPS
    assert rep["rows_read"] == 76
    assert rep["source"] == str(FIXTURE)
    text = notes(trace)
    for expected in ("3 kept tasks were resubmitted", "1 kept tasks ended in FAIL",
                     "2 kept tasks ended in KILL", "1 kept tasks had a zero-length run",
                     "1 kept jobs have no job_events row", "9 tasks left out with their dropped",
                     "read 76 task events and 18 job events", "wrote 13 tasks"):
        assert expected in text


def test_events_out_of_order_within_and_across_parts(trace):
    # J100's FINISH is in part 0, SCHEDULE in part 1, SUBMIT in part 2; J200 is reversed
    # inside part 1; J1300's SCHEDULE precedes its same-microsecond SUBMIT in the file.
    assert rows(trace)[(100, 0)][:2] == (1000, 100)
    assert rows(trace)[(200, 0)][:2] == (2000, 60)
    assert rows(trace)[(1300, 0)][:2] == (13000, 20)
    assert "55 task events were earlier than an event before them" in notes(trace)


def test_missing_schedule_drops_the_whole_job(trace):
    assert 300 not in set(trace.frame["job_id"])  # its task 1 was fine
    assert trace.meta["load_report"]["dropped"][R[5]] == 1


def test_eviction_and_resubmission_use_the_last_attempt(trace):
    got = rows(trace)
    assert got[(200, 0)][1] == 60  # 2200 -> 2260, not 2005 -> 2100
    assert got[(200, 0)][2:4] == (32, 64)  # request of the last SCHEDULE
    assert got[(1600, 0)][1] == 30  # evict, resubmit, reschedule at one microsecond
    assert got[(1500, 0)][1] == 30  # killed while pending after its last run


def test_fail_and_kill_kept_by_default_with_runtime_to_that_event(trace):
    got = rows(trace)
    assert got[(400, 0)][1] == 30 and got[(500, 0)][1] == 90


def test_terminal_finish_keeps_only_all_finished_jobs():
    tr = g.load(FIXTURE, terminal="finish")
    assert set(tr.frame["job_id"]) == {100, 200, 1000, 1100, 1300, 1600, 1800}
    dropped = tr.meta["load_report"]["dropped"]
    assert dropped[R[10]] == 4  # J400 FAIL, J500 KILL, J700 pending KILL, J1500 KILL
    assert g.TASK_REASONS[g.TASK_NEVER_SCHEDULED] not in dropped  # its job went first
    assert "terminal=finish" in notes(tr)


@pytest.mark.slow
def test_terminal_task_finish_keeps_exactly_the_finished_tasks_and_their_jobs(trace):
    tr = g.load(FIXTURE, terminal="task-finish")
    # J400 task 0 FAILed, J500 and J1500 were KILLed after a run: those tasks go; J400's
    # FINISHed task 1 stays although its sibling failed, with the values it has by default
    not_finished = {(400, 0), (500, 0), (1500, 0)}
    assert set(rows(tr)) == set(rows(trace)) - not_finished
    assert all(rows(tr)[k] == rows(trace)[k] for k in rows(tr))
    dropped = tr.meta["load_report"]["dropped"]
    assert dropped == {**DEFAULT_DROPS, g.TASK_REASONS[g.TASK_NOT_FINISHED]: 3}
    assert "terminal=task-finish: only tasks whose final event is FINISH" in notes(tr)
    assert "ended in KILL" not in notes(tr) and "ended in FAIL" not in notes(tr)


def test_task_finish_keeps_the_same_jobs_under_a_window():
    # the window judges a job by all its events, the killed tasks' included
    tr = g.load(FIXTURE, terminal="task-finish", **WINDOW)
    assert set(tr.frame["job_id"]) == set(EXPECTED) - {100, 1800, 500, 1500}


# --- anti-affinity (different_machine) ----------------------------------------------------

def test_anti_affinity_is_read_from_the_submit_that_opened_the_kept_run(trace):
    got = dict(zip(zip(trace.frame["job_id"], trace.frame["task_id"]),
                   trace.frame["anti_affinity"]))
    # J100: every event flagged. J200: only the resubmission that opened its last run.
    # J1300: only its SCHEDULE is flagged; J1500: only a resubmission that never ran;
    # J1600: only the first SUBMIT, before the same-microsecond resubmission and reschedule
    assert {k for k, v in got.items() if v} == {(100, 0), (100, 1), (200, 0)}
    assert trace.frame["anti_affinity"].dtype == bool
    text = notes(trace)
    assert "3 kept tasks in 2 jobs carry different_machine (anti_affinity = true)" in text
    assert "1 kept tasks' SUBMIT had no different_machine value" in text  # J1000 task 0


@pytest.mark.slow
def test_anti_affinity_ignore_leaves_the_column_out(trace, tmp_path):
    tr = g.load(FIXTURE, anti_affinity="ignore")
    assert "anti_affinity" not in tr.frame.columns
    assert tr.frame.equals(trace.frame.drop(columns=["anti_affinity"]))
    assert "anti_affinity=ignore: the column is left out (3 kept tasks in 2 jobs" in notes(tr)
    g.convert(FIXTURE, tmp_path / "o.parquet", anti_affinity="IGNORE")
    assert pq.read_table(tmp_path / "o.parquet").column_names == list(REQUIRED)


def test_anti_affinity_survives_convert_and_the_canonical_reader(tmp_path, trace):
    from stratus.traces.conversion import convert_trace

    out = tmp_path / "g.parquet"
    convert_trace(str(FIXTURE), "google2011", out)
    back = load_file(out, "canonical")
    assert back.frame.equals(trace.frame)
    again = tmp_path / "again.parquet"
    convert_trace(str(out), None, again)  # canonical -> canonical keeps it too
    assert load_file(again, "canonical").frame["anti_affinity"].tolist() == \
        trace.frame["anti_affinity"].tolist()


def test_lost_drops_the_job(trace):
    assert 600 not in set(trace.frame["job_id"])
    assert trace.meta["load_report"]["dropped"][R[6]] == 1


def test_never_scheduled_task_dropped_job_kept(trace):
    assert {k for k in rows(trace) if k[0] == 700} == {(700, 1)}


def test_timestamp_zero_after_end_and_still_running_jobs_dropped_without_window(trace):
    jobs = set(trace.frame["job_id"])
    assert not jobs & {800, 1200, 900, 1400, 1700}


def test_window_keeps_only_jobs_inside_it():
    tr = g.load(FIXTURE, **WINDOW)
    jobs = set(tr.frame["job_id"])
    assert 100 not in jobs  # submitted at 1000 s, before the start
    assert 1800 not in jobs  # runs until 21000 s, after the end
    assert jobs == set(EXPECTED) - {100, 1800}
    dropped = tr.meta["load_report"]["dropped"]
    assert dropped[R[8]] == 1 and dropped[R[9]] == 1
    assert dropped[R[1]] == 1  # timestamp 0 still counted under its own reason
    assert "window [1500, 20000] s" in notes(tr)


@pytest.mark.slow
def test_window_hours_equals_window_end():
    a = g.load(FIXTURE, window_start_s="1500", window_hours=str(18500 / 3600))
    b = g.load(FIXTURE, **WINDOW)
    assert a.frame.equals(b.frame)


def test_normalisation_to_the_largest_instance(trace):
    got = rows(trace)
    assert got[(100, 1)][2:4] == (0.25 * 64, 0.125 * 256)


def test_job_names_logical_then_name_then_id(trace):
    got = rows(trace)
    assert got[(100, 0)][5] == "wordcount"
    assert got[(200, 0)][5] == "jobB"
    assert got[(1000, 0)][5] == "job-1000"  # both names empty
    assert got[(1300, 0)][5] == "job-1300"  # no job_events row


def test_empty_fields_fall_back(trace):
    # J1000 task 0: SCHEDULE has no request -> the SUBMIT's; user from the SCHEDULE;
    # priority from the latest event that has one. Task 1 has no request at all.
    assert rows(trace)[(1000, 0)][2:] == (4, 8, "u2", "job-1000", 2)
    assert (1000, 1) not in rows(trace)


def test_zero_length_run_raised_to_one_microsecond(trace):
    assert rows(trace)[(1100, 0)][1] == pytest.approx(1e-6)


# --- output and registry --------------------------------------------------------------

def test_convert_writes_canonical_sorted_parquet_with_report(tmp_path, trace):
    out = tmp_path / "g.parquet"
    report = g.convert(FIXTURE, out)
    table = pq.read_table(out)
    assert table.column_names == [*REQUIRED, "anti_affinity"]
    types = {f.name: str(f.type) for f in table.schema}
    assert types == {"job_id": "int64", "task_id": "int64", "submit_s": "double",
                     "runtime_s": "double", "cpu": "double", "mem_gib": "double",
                     "user": "string", "job_name": "string", "priority": "int64",
                     "anti_affinity": "bool"}
    meta = table.schema.metadata
    assert json.loads(meta[b"stratus.load_report"]) == report.as_dict()
    assert meta[b"stratus.trace.name"] == b"google2011:basic"
    frame = table.to_pandas()
    assert frame.equals(validate_frame(frame))  # already sorted by (submit_s, job, task)
    assert report.as_dict() == trace.meta["load_report"]
    assert not list(tmp_path.glob("*.partial"))


def test_registry_and_string_options(tmp_path):
    tr = load_file(FIXTURE, "google2011?window_start_s=1500&window_end_s=20000")
    assert len(tr) == 10
    spec = f"google2011?terminal=finish&memory_limit=256MB&threads=1&temp_directory={tmp_path}/w"
    rep = convert_file(FIXTURE, spec, tmp_path / "o.parquet")
    assert rep.dropped[R[10]] == 4
    assert (tmp_path / "w").is_dir() and not list((tmp_path / "w").iterdir())  # cleaned up


@pytest.mark.parametrize("options, name", [
    ({"window_hours": "abc"}, "window_hours"),
    ({"window_start_s": "-5"}, "window_start_s"),
    ({"window_hours": "0"}, "window_hours"),
    ({"window_end_s": "inf"}, "window_end_s"),
    ({"window_start_s": "100", "window_end_s": "50"}, "window_end_s"),
    ({"window_hours": "1", "window_end_s": "50"}, "window_end_s"),
    ({"terminal": "lost"}, "terminal"),
    ({"terminal": "tasks"}, "terminal"),
    ({"anti_affinity": "maybe"}, "anti_affinity"),
    ({"anti_affinity": ""}, "anti_affinity"),
    ({"memory_limit": "lots"}, "memory_limit"),
    ({"memory_limit": "64MB"}, "memory_limit"),
    ({"threads": "0"}, "threads"),
    ({"threads": "two"}, "threads"),
    ({"windows": "1"}, "windows"),
])
def test_bad_options_raise_config_error_naming_the_option(options, name):
    with pytest.raises(ConfigError, match=name):
        g.load(FIXTURE, **options)


def test_missing_directories_and_parts_name_the_path(tmp_path):
    with pytest.raises(TraceError, match="nowhere"):
        g.load(tmp_path / "nowhere")
    (tmp_path / "task_events").mkdir()
    with pytest.raises(TraceError, match="job_events: no such directory"):
        g.load(tmp_path)
    (tmp_path / "job_events").mkdir()
    (tmp_path / "job_events" / "README").write_text("no parts here")
    with pytest.raises(TraceError, match="job_events: no CSV parts"):
        g.load(tmp_path)
    (tmp_path / "job_events" / "part-00000-of-00001.csv").write_bytes(b"")
    with pytest.raises(TraceError, match="task_events: no CSV parts"):
        g.load(tmp_path)


def test_empty_parts_give_an_empty_trace(tmp_path):
    for table in ("job_events", "task_events"):
        (tmp_path / table).mkdir()
        (tmp_path / table / "part-00000-of-00001.csv").write_bytes(b"")
    tr = g.load(tmp_path)
    assert len(tr) == 0 and tr.meta["load_report"]["rows_read"] == 0


# --- malformed input ---------------------------------------------------------------------

def copy_fixture(dst: Path) -> Path:
    shutil.copytree(FIXTURE, dst)
    return dst


def part_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def put_bytes(path: Path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data)


def edit_line(path: Path, index: int, fn) -> None:
    lines = part_bytes(path).split(b"\n")
    lines[index] = fn(lines[index])
    put_bytes(path, b"\n".join(lines))


PLAIN = "task_events/part-00001-of-00003.csv"
GZ = "task_events/part-00002-of-00003.csv.gz"


@pytest.mark.slow
@pytest.mark.parametrize("part, index, fn, match", [
    (PLAIN, 2, lambda b: b"hello,world", r"line 3: expected 13 comma-separated fields, found 2"),
    (GZ, 0, lambda b: b[:20], r"line 1: expected 13"),
    (GZ, 1, lambda b: b.replace(b",u1,", b",u\xff1,"), r"line 2, field 'user': not UTF-8"),
    (PLAIN, 3, lambda b: b"x" + b, r"line 4, field 'ts'"),
    (PLAIN, 4, lambda b: b.replace(b",0,u1", b",9,u1"), r"line 5, field 'event_type': unknown"),
    (PLAIN, 0, lambda b: b"," + b.split(b",", 1)[1], r"line 1, field 'ts': empty, but required"),
    (GZ, 2, lambda b: b.replace(b",0.125,", b",-0.125,"), r"line 3, field 'cpu_request'"),
    (PLAIN, 1, lambda b: b[:-1] + b"2", r"line 2, field 'different_machine': a flag must be 0"),
    ("job_events/part-00001-of-00002.csv", 1, lambda b: b.replace(b",1000,", b",,"),
     r"line 2, field 'job_id'"),
])
def test_malformed_line_names_file_line_and_field(tmp_path, part, index, fn, match):
    d = copy_fixture(tmp_path / "t")
    edit_line(d / part, index, fn)
    with pytest.raises(TraceError, match=match) as info:
        g.load(d)
    assert Path(part).name in str(info.value)


def test_truncated_and_empty_gzip_name_the_file(tmp_path):
    d = copy_fixture(tmp_path / "t")
    p = d / GZ
    p.write_bytes(p.read_bytes()[:-12])
    with pytest.raises(TraceError, match=r"part-00002-of-00003\.csv\.gz: line \d+: corrupt"):
        g.load(d)
    p.write_bytes(b"")
    with pytest.raises(TraceError, match=r"part-00002-of-00003\.csv\.gz: line 1: empty file"):
        g.load(d)


def test_crlf_line_endings_read_the_same(tmp_path, trace):
    d = copy_fixture(tmp_path / "t")
    for p in d.rglob("part-*"):
        put_bytes(p, part_bytes(p).replace(b"\n", b"\r\n"))
    assert g.load(d).frame.equals(trace.frame)


@pytest.mark.slow
def test_request_above_one_is_kept_scaled_and_noted(tmp_path):
    d = copy_fixture(tmp_path / "t")
    part = d / "task_events/part-00002-of-00003.csv.gz"
    put_bytes(part, part_bytes(part).replace(b",500,0,,1,u1,1,2,0.125,", b",500,0,,1,u1,1,2,1.5,"))
    tr = g.load(d)
    assert rows(tr)[(500, 0)][2] == 1.5 * 64
    assert "1 kept tasks request more than the largest machine" in notes(tr)


def test_unwritable_output_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match="cannot write"):
        g.convert(FIXTURE, tmp_path / "missing-dir" / "o.parquet")


# --- property tests ----------------------------------------------------------------------

def all_task_lines() -> list[bytes]:
    out = []
    for p in sorted((FIXTURE / "task_events").iterdir()):
        out += [x for x in part_bytes(p).split(b"\n") if x]
    return out


@pytest.mark.slow
@settings(max_examples=8)
@given(seed=st.integers(0, 2**32 - 1), nparts=st.integers(1, 4))
def test_file_order_never_matters(trace, seed, nparts):
    rng = random.Random(seed)
    lines = all_task_lines()
    rng.shuffle(lines)
    with tempfile.TemporaryDirectory() as tmp:
        d = copy_fixture(Path(tmp) / "t")
        shutil.rmtree(d / "task_events")
        (d / "task_events").mkdir()
        for i in range(nparts):
            name = f"part-{i:05d}-of-{nparts:05d}.csv" + (".gz" if rng.random() < 0.5 else "")
            put_bytes(d / "task_events" / name, b"".join(x + b"\n" for x in lines[i::nparts]))
        got = g.load(d)
    assert got.frame.equals(trace.frame)
    assert got.meta["load_report"]["dropped"] == DEFAULT_DROPS


def corrupt_text(data: bytes, kind: str, rng: random.Random) -> bytes:
    """One text-level corruption of a part's decompressed bytes."""
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    fields = lines[i].split(b",")
    if kind == "flip" and data:
        pos = rng.randrange(len(data))
        return data[:pos] + bytes([data[pos] ^ rng.randrange(1, 256)]) + data[pos + 1:]
    if kind == "truncate_line":
        lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
    elif kind == "garbage_line":
        lines.insert(i, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))))
    elif kind == "swap_fields" and len(fields) > 1:
        a, b = rng.sample(range(len(fields)), 2)
        fields[a], fields[b] = fields[b], fields[a]
        lines[i] = b",".join(fields)
    elif kind == "remove_field":
        del fields[rng.randrange(len(fields))]
        lines[i] = b",".join(fields)
    elif kind == "non_utf8":
        pos = rng.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:pos] + rng.choice([b"\xff", b"\xc3", b"\xe2\x82", b"\x80"]) \
            + lines[i][pos:]
    elif kind == "truncate_file":
        return data[:rng.randrange(len(data) + 1)]
    elif kind == "delete_line":
        del lines[i]
    return b"\n".join(lines)


TEXT_KINDS = ["flip", "truncate_line", "garbage_line", "swap_fields", "remove_field",
              "non_utf8", "truncate_file", "delete_line"]
RAW_KINDS = ["truncate_gzip", "flip_gzip"]


def corrupt_part(path: Path, kind: str, rng: random.Random) -> None:
    raw = path.read_bytes()
    if kind in RAW_KINDS:
        if not path.name.endswith(".gz") or not raw:
            return
        if kind == "truncate_gzip":
            path.write_bytes(raw[:rng.randrange(len(raw))])
        else:
            pos = rng.randrange(len(raw))
            path.write_bytes(raw[:pos] + bytes([raw[pos] ^ rng.randrange(1, 256)]) + raw[pos + 1:])
        return
    put_bytes(path, corrupt_text(part_bytes(path), kind, rng))


@pytest.mark.slow
@settings(max_examples=25)  # new every run
@given(seed=st.integers(0, 2**32 - 1),
       kinds=st.lists(st.sampled_from(TEXT_KINDS + RAW_KINDS), min_size=1, max_size=3))
def test_fuzzed_input_gives_a_trace_or_a_trace_error(seed, kinds):
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        d = copy_fixture(Path(tmp) / "t")
        parts = sorted(p for p in d.rglob("part-*"))
        # text-level edits first: they need parts that still decompress
        for kind in sorted(kinds, key=lambda k: k in RAW_KINDS):
            corrupt_part(rng.choice(parts), kind, rng)
        try:
            tr = g.load(d)
        except TraceError as exc:
            assert str(d) in str(exc) or d.name in str(exc)
            return
    assert isinstance(tr, Trace)
    validate_frame(tr.frame)
    assert tr.meta["load_report"]["rows_read"] >= len(tr)


@pytest.mark.slow
def test_duckdb_draws_no_progress_bar_on_stdout(tmp_path):
    # python -c is a session DuckDB deems interactive: its bar went to stdout there
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from traces import google2011 as g; "
            "con = g._connect(Path(sys.argv[1]), g.parse_options({})); "
            "print(con.execute(\"SELECT current_setting('enable_progress_bar')\").fetchone()[0])")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "False"


# --- the bundled real excerpt (tests/data/google2011-excerpt) ----------------------------

EXCERPT = DATA / "google2011-excerpt"
# lifecycle rank at one timestamp, as the loader orders events (SUBMIT first, terminals last)
RANK = {g.SUBMIT: 0, g.UPDATE_PENDING: 1, g.SCHEDULE: 2, g.UPDATE_RUNNING: 3}


def excerpt_tasks() -> dict[tuple[int, int], list[tuple[int, int, int, str]]]:
    """(job, task) -> its events as (ts, rank, type, different_machine), in order, read
    without the loader."""
    out: dict[tuple[int, int], list] = {}
    with gzip.open(EXCERPT / "task_events" / "part-00000-of-00500.csv.gz", "rt") as fh:
        for line in fh:
            f = line.rstrip("\n").split(",")
            etype = int(f[5])
            out.setdefault((int(f[2]), int(f[3])), []).append(
                (int(f[0]), RANK.get(etype, etype + 2), etype, f[12]))
    return {k: sorted(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def excerpt():
    return g.load(EXCERPT), g.load(EXCERPT, terminal="task-finish"), excerpt_tasks()


@pytest.mark.slow
def test_excerpt_task_finish_is_the_default_minus_the_unfinished_tasks(excerpt):
    every, finished, events = excerpt
    terminal = {k: [e[2] for e in ev if g.EVICT <= e[2] <= g.LOST][-1] for k, ev in events.items()}
    keys = set(zip(every.frame["job_id"], every.frame["task_id"]))
    want = {k for k in keys if terminal[k] == g.FINISH}
    assert set(zip(finished.frame["job_id"], finished.frame["task_id"])) == want
    assert len(keys - want) == 744  # 718 KILL + 26 FAIL after a run, as the report notes
    assert finished.meta["load_report"]["dropped"][g.TASK_REASONS[g.TASK_NOT_FINISHED]] == 744
    # the kept tasks are unchanged: same rows as in the default reading
    merged = every.frame.merge(finished.frame, on=["job_id", "task_id"], suffixes=("", "_f"))
    assert len(merged) == len(finished)
    for col in ("submit_s", "runtime_s", "cpu", "mem_gib", "anti_affinity"):
        assert (merged[col] == merged[f"{col}_f"]).all(), col


@pytest.mark.slow
def test_excerpt_flag_is_the_submit_before_the_last_schedule(excerpt):
    every, _, events = excerpt
    want = set()
    for key, ev in events.items():
        last_sched = max((e[:2] for e in ev if e[2] == g.SCHEDULE), default=None)
        opening = [e for e in ev if e[2] == g.SUBMIT and (last_sched is None or e[:2] < last_sched)]
        if opening and opening[-1][3] == "1":
            want.add(key)
    f = every.frame
    got = set(zip(f["job_id"][f["anti_affinity"]], f["task_id"][f["anti_affinity"]]))
    assert got == want & set(zip(f["job_id"], f["task_id"]))
    assert (len(got), f["job_id"][f["anti_affinity"]].nunique()) == (69, 4)

