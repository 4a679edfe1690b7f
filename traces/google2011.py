"""Google cluster trace 2011 (schema v2.1) -> canonical trace, out of core with DuckDB.

Input: a directory with ``job_events/`` and ``task_events/``, each holding headerless CSV
parts, plain or gzip (``part-00000-of-00500.csv.gz``). Parts are read in name order.

* task_events: timestamp (us), missing info, job ID, task index, machine ID, event type,
  user, scheduling class, priority, CPU request, memory request, disk request,
  different-machine restriction.
* job_events: timestamp, missing info, job ID, event type, user, scheduling class,
  job name, logical job name.
* event types: 0 SUBMIT, 1 SCHEDULE, 2 EVICT, 3 FAIL, 4 FINISH, 5 KILL, 6 LOST,
  7 UPDATE_PENDING, 8 UPDATE_RUNNING. Timestamp 0 is "before the trace", 2^63-1 "after".

Output: one canonical row per task (traces/schema.py): ``submit_s`` = the task's first
SUBMIT, ``runtime_s`` = its last SCHEDULE to the event that ended that run, ``cpu`` =
CPU request x 64 and ``mem_gib`` = memory request x 256 (requests are normalised to the
largest machine; Stratus §4.2 scales them to the largest instance, m4.16xlarge), ``job_name``
= the logical job name, else the job name, else ``job-<id>``; ``user`` and ``priority`` from
the task's events. The request is the one on the last SCHEDULE, falling back (per dimension)
to the task's latest non-empty request; a missing dimension is 0. ``anti_affinity`` (bool,
unless ``anti_affinity=ignore``) = the different-machine flag (rule 15).

Semantics. Every task or job left out is counted in the LoadReport (``dropped``, by reason;
``notes`` for changes to kept rows). A job is counted once, under the first reason that
applies, in JOB_REASONS order: timestamp 0, after the end, still running, no SUBMIT,
missing SCHEDULE, LOST, final EVICT, window start, window end, terminal=finish. A task of a
kept job is counted once, under never scheduled, then terminal=task-finish, then no request.

1. Order: events are ordered by timestamp, ties in lifecycle order (SUBMIT, UPDATE_PENDING,
   SCHEDULE, UPDATE_RUNNING, then EVICT/FAIL/FINISH/KILL/LOST); file order is never
   trusted. Note: task events earlier than some event before them in file order (parts by
   name, then line).
2. Before / after the trace: a job with any event (task or job) at timestamp 0 started
   before the trace; one at 2^63-1 ends after it. Both are dropped even without a window
   (Stratus §4.2: no partial jobs).
3. Still running: a job with a task that has no final event (running or pending at the
   trace end) is dropped.
4. No SUBMIT: a job with a task without any SUBMIT has no submit time: dropped.
5. Missing SCHEDULE: a FINISH or EVICT ending an attempt that has no SCHEDULE (none at all,
   or none since the last SUBMIT) means the run's start is lost: the task has no runtime
   and its whole job is dropped (a job missing a task misrepresents the job).
6. LOST: no trustworthy end: the job is dropped.
7. A task whose final event is EVICT (never resubmitted in the trace) has no outcome: its
   job is dropped.
8. Resubmission: after EVICT/FAIL/KILL/LOST a task may be SUBMITted again; only the last
   SCHEDULE -> end-of-that-run attempt is the runtime. Note: kept resubmitted tasks.
   Ties: a resubmission SUBMIT at the microsecond of the EVICT sorts before it; the run
   still ends at that EVICT. If the task is also rescheduled at that microsecond, the
   run's end is the last terminal event after the last SCHEDULE.
9. Final event: FINISH is kept. FAIL and KILL after a run are kept by default
   (``terminal=any``) with runtime last SCHEDULE -> that event: the cluster ran them that
   long and paid for it. A task resubmitted and then killed/failed before being scheduled
   again keeps its last run. ``terminal=finish`` keeps only jobs all of whose tasks
   FINISH (a job with a never-scheduled task goes too). ``terminal=task-finish`` keeps only
   the tasks whose final event is FINISH, their jobs otherwise whole: the same jobs as
   ``any`` (windows judge a job by all its events), without their FAIL/KILL tasks (a job
   left with none disappears). Notes: kept FAIL / KILL tasks.
10. Never scheduled: a task with no SCHEDULE that ended in KILL or FAIL (the v2.1 schema
    allows FAIL while pending) used nothing: the task is dropped, its job kept.
11. No request: a task whose CPU and memory requests are both empty or zero is dropped.
    One missing dimension is taken as 0 (note); requests above 1.0 are kept (note).
12. Window (``window_start_s``, ``window_hours`` or ``window_end_s``, seconds of trace
    time): only jobs that start and end inside it, i.e. every task's first SUBMIT >= start
    and its last event <= end (Stratus §4.2). Jobs crossing the start and the end are
    counted separately.
13. Zero-length runs (SCHEDULE and end at the same microsecond) are kept with runtime
    raised to 1 us, the trace's resolution: dropping them would leave partial jobs. Note.
14. Names and users: job_name is the latest non-empty logical job name, else job name,
    else ``job-<id>`` (note: jobs without job_events); user is the task's latest non-empty
    user, else the job's, else 'unknown'; priority is the one on the last SCHEDULE, else
    the latest non-empty, else 0 (notes).
15. Anti-affinity: ``different_machine`` ("the task must be scheduled to execute on a
    different machine than any other currently running task in the job", v2.1 schema) is
    read from the SUBMIT that opened the kept run (the last SUBMIT before the last
    SCHEDULE), as the run's request is; empty is false (note). A value other than 0, 1 or
    empty is malformed input. Note: flagged kept tasks and jobs.

Malformed input (wrong field count, non-numeric field, non-UTF-8 bytes, corrupt or
truncated gzip, stray carriage return, empty timestamp/job/task/event type, unknown event
type, negative ids or timestamps, negative or non-finite requests, a different_machine
other than 0/1) raises TraceError naming the file, the 1-based line and, where known, the
field. DuckDB's rejects table locates CSV errors; other failures are located by a plain
Python scan of the file.

Memory: one streaming pass per table; per-(job, task) aggregation in DuckDB with a file
database and a spill directory, so RSS stays near ``memory_limit`` plus the interpreter,
whatever the trace size. Options (strings accepted, as from ``--format google2011?...``):
window_start_s, window_hours | window_end_s, terminal=any|finish|task-finish,
anti_affinity=keep|ignore (default keep: emit the column), memory_limit (default
1GB, at least 128MB), threads, temp_directory (where DuckDB keeps its work database and
spills; default the system temp dir).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import shutil
import tempfile
import threading
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from stratus.base import tempnames
from stratus.base.errors import ConfigError, TraceError
from stratus.traces.schema import LoadReport, Trace
from stratus.traces.tables import (
    check_options,
    option_choice,
    option_float,
    option_int,
    option_text,
)

SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING = range(9)
TS_AFTER = 2**63 - 1
LARGEST_CPU, LARGEST_MEM_GIB = 64.0, 256.0  # Stratus §4.2, Fig. 3c: m4.16xlarge
RUNTIME_FLOOR_S = 1e-6  # the trace's resolution is 1 us
DEFAULT_MEMORY_LIMIT = "1GB"
REJECTS_PER_FILE = 5
# trace lines are ~100 bytes; DuckDB's default 32 MiB read buffer per thread would be most
# of a small memory_limit
MAX_LINE_BYTES, BUFFER_BYTES = 1 << 16, 1 << 22
COUNT_ERRORS = ("MISSING COLUMNS", "TOO MANY COLUMNS")  # reported before a cast error

# (name, DuckDB type, required, domain check) in file column order
Field = tuple[str, str, bool, str]
TASK_FIELDS: list[Field] = [
    ("ts", "BIGINT", True, "ts"), ("missing_info", "INTEGER", False, ""),
    ("job_id", "BIGINT", True, "id"), ("task_index", "BIGINT", True, "id"),
    ("machine_id", "BIGINT", False, ""), ("event_type", "INTEGER", True, "type"),
    ("user", "VARCHAR", False, ""), ("scheduling_class", "INTEGER", False, ""),
    ("priority", "INTEGER", False, ""), ("cpu_request", "DOUBLE", False, "request"),
    ("memory_request", "DOUBLE", False, "request"), ("disk_request", "DOUBLE", False, ""),
    ("different_machine", "INTEGER", False, "flag"),
]
JOB_FIELDS: list[Field] = [
    ("ts", "BIGINT", True, "ts"), ("missing_info", "INTEGER", False, ""),
    ("job_id", "BIGINT", True, "id"), ("event_type", "INTEGER", True, "type"),
    ("user", "VARCHAR", False, ""), ("scheduling_class", "INTEGER", False, ""),
    ("job_name", "VARCHAR", False, ""), ("logical_job_name", "VARCHAR", False, ""),
]

# job drop reasons by precedence code (a job is counted under its smallest code)
JOB_REASONS = {
    1: "jobs with events at timestamp 0 (started before the trace)",
    2: "jobs with events after the trace end (timestamp 2^63-1)",
    3: "jobs with a task still running or pending at the trace end (no final event)",
    4: "jobs with a task without a SUBMIT event",
    5: "jobs with a task that ended without a SCHEDULE (missing SCHEDULE)",
    6: "jobs with a LOST task (no trustworthy end)",
    7: "jobs with a task evicted and never resubmitted",
    8: "jobs submitted before the window start",
    9: "jobs ending after the window end",
    10: "jobs with a task that did not FINISH (terminal=finish)",
}
TASK_NEVER_SCHEDULED, TASK_NO_REQUEST, TASK_NOT_FINISHED = 20, 21, 22
TASK_REASONS = {
    TASK_NEVER_SCHEDULED: "tasks never scheduled (killed or failed while pending)",
    TASK_NOT_FINISHED: "tasks whose final event is not FINISH (terminal=task-finish)",
    TASK_NO_REQUEST: "tasks without any CPU or memory request",
}
# terminal= readings: every run (any), whole jobs that all FINISH (finish), FINISHed tasks
# of otherwise whole jobs (task-finish); docs/decisions.md "Google 2011: two readings"
TERMINALS = {"any": "any", "finish": "finish", "task-finish": "task-finish"}
# anti_affinity=: emit the column from different_machine (keep) or leave it out (ignore)
ANTI_AFFINITY = {"keep": True, "ignore": False}
# a SUBMIT's different_machine, packed into the low 2 bits of its ordering key
FLAG_OFF, FLAG_ON, FLAG_EMPTY = 0, 1, 2
MEMORY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$",
                       re.IGNORECASE)
MIN_MEMORY_BYTES = 128e6
FORMAT = "google2011"
OPTION_NAMES = ("window_start_s", "window_hours", "window_end_s", "terminal", "anti_affinity",
                "memory_limit", "threads", "temp_directory")


# --- options ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Options:
    """Checked conversion options; window bounds in microseconds of trace time."""

    start_us: int | None = None
    end_us: int | None = None
    finish_only: bool = False
    task_finish: bool = False
    anti_affinity: bool = True
    memory_limit: str = DEFAULT_MEMORY_LIMIT
    threads: int | None = None
    temp_directory: str | None = None


def memory_bytes(text: str) -> float:
    """'512MB' -> bytes, as DuckDB reads it (KB = 1000, KiB = 1024); ConfigError if bad."""
    m = MEMORY_RE.match(str(text))
    if not m:
        raise ConfigError(f"google2011 option memory_limit={text!r}: use e.g. 512MB or 2GB")
    unit = m.group(2).upper()
    base = 1024 if unit.endswith("IB") else 1000
    power = "BKMGT".index(unit[0])
    return float(m.group(1)) * base**power


def parse_options(options: dict) -> Options:
    """Convert option strings; ConfigError names the bad option."""
    check_options(FORMAT, options, OPTION_NAMES)
    start = option_float(FORMAT, options, "window_start_s", None)
    hours = option_float(FORMAT, options, "window_hours", None, inclusive=False)
    end = option_float(FORMAT, options, "window_end_s", None)
    if hours is not None and end is not None:
        raise ConfigError("google2011: give window_hours or window_end_s, not both")
    if hours is not None:
        end = (start or 0.0) + hours * 3600.0
    if end is not None and end <= (start or 0.0):
        raise ConfigError(f"google2011 option window_end_s={end:g}: must be after "
                          f"window_start_s={start or 0.0:g}")
    terminal, _ = option_choice(FORMAT, options, "terminal", TERMINALS, "any")
    _, anti = option_choice(FORMAT, options, "anti_affinity", ANTI_AFFINITY, "keep")
    memory = option_text(FORMAT, options, "memory_limit", DEFAULT_MEMORY_LIMIT)
    if memory_bytes(memory) < MIN_MEMORY_BYTES:
        raise ConfigError(f"google2011 option memory_limit={memory!r}: need at least 128MB "
                          "(DuckDB's CSV and gzip buffers alone take most of 64MB)")
    return Options(
        start_us=None if start is None else int(round(start * 1e6)),
        end_us=None if end is None else int(round(end * 1e6)),
        finish_only=terminal == "finish", task_finish=terminal == "task-finish",
        anti_affinity=anti, memory_limit=memory,
        threads=option_int(FORMAT, options, "threads", None, minimum=1),
        temp_directory=option_text(FORMAT, options, "temp_directory", None))


# --- input files -----------------------------------------------------------------------

def find_parts(root: Path, table: str) -> list[Path]:
    """The CSV parts of ``root/table`` in name order; TraceError naming what is missing."""
    folder = Path(root) / table
    if not folder.is_dir():
        raise TraceError(f"{folder}: no such directory (a Google 2011 trace is a directory "
                         "with job_events/ and task_events/)")
    parts = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
                   and p.name.lower().endswith((".csv", ".csv.gz")))
    if not parts:
        raise TraceError(f"{folder}: no CSV parts (*.csv or *.csv.gz)")
    return parts


def input_files(path: str | Path, **options) -> list[tuple[str, Path]]:
    """(name, file) for every file ``load`` reads, in reading order (the trace cache's key,
    traces/cache.py)."""
    root = Path(path)
    return [(f"{table}/{p.name}", p) for table in ("job_events", "task_events")
            for p in find_parts(root, table)]


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _read_csv(parts: Sequence[Path], fields: list[Field], rejects: str) -> str:
    """A strict read_csv call: explicit columns, no sniffing, bad lines to a rejects table."""
    files = "[" + ", ".join(_sql_str(str(p)) for p in parts) + "]"
    cols = "{" + ", ".join(f"{_sql_str(n)}: {_sql_str(t)}" for n, t, _, _ in fields) + "}"
    # the trace has no quoting: a stray quote byte must not swallow the following lines
    return (f"read_csv({files}, columns={cols}, header=false, auto_detect=false, delim=',', "
            f"quote='', escape='', compression='auto', filename=true, store_rejects=true, "
            f"rejects_table='{rejects}', rejects_scan='{rejects}_scan', "
            f"rejects_limit={REJECTS_PER_FILE}, max_line_size={MAX_LINE_BYTES}, "
            f"buffer_size={BUFFER_BYTES})")


def _bad_sql(fields: list[Field]) -> str:
    """SQL that is true for a row violating a domain rule (mirrors _domain_error)."""
    terms = []
    for name, _, required, check in fields:
        col = f'"{name}"'
        if required:
            terms.append(f"{col} IS NULL")
        if check in ("ts", "id"):
            terms.append(f"{col} < 0")
        elif check == "type":
            terms.append(f"{col} NOT BETWEEN 0 AND 8")
        elif check == "request":
            terms.append(f"({col} < 0 OR NOT isfinite({col} * {LARGEST_MEM_GIB}))")
        elif check == "flag":
            terms.append(f"{col} NOT IN (0, 1)")
    return "coalesce(" + " OR ".join(terms) + ", false)"


# lifecycle rank at equal timestamps: SUBMIT, UPDATE_PENDING, SCHEDULE, UPDATE_RUNNING,
# then the terminal events (rank = type + 2, so a key decodes back to its terminal type)
KEY_SQL = ("(ts::HUGEINT * 16 + CASE event_type WHEN 0 THEN 0 WHEN 7 THEN 1 WHEN 1 THEN 2 "
           "WHEN 8 THEN 3 ELSE event_type + 2 END)")


# --- locating bad lines ----------------------------------------------------------------

def _open_lines(path: Path) -> Iterator[bytes]:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rb") as fh:
        yield from fh


def _parse_field(raw: str, kind: str) -> float | int | str | None:
    if raw == "":
        return None
    if kind in ("BIGINT", "INTEGER"):
        if not re.fullmatch(r"\s*[+-]?\d+\s*", raw):
            raise ValueError(f"not an integer: {raw[:40]!r}")
        return int(raw)
    if kind == "DOUBLE":
        return float(raw)
    return raw


def _domain_error(name: str, value, required: bool, check: str) -> str | None:
    """Why ``value`` breaks a domain rule, or None (mirrors _bad_sql)."""
    if value is None:
        return "empty, but required" if required else None
    if check in ("ts", "id") and value < 0:
        return f"negative: {value}"
    if check == "type" and not 0 <= value <= 8:
        return f"unknown event type {value} (0..8)"
    if check == "request" and (value < 0 or not math.isfinite(value * LARGEST_MEM_GIB)):
        return f"request not a finite number >= 0: {value}"
    if check == "flag" and value not in (0, 1):
        return f"a flag must be 0 or 1, got {value}"
    return None


def _line_error(line: bytes, fields: list[Field]) -> tuple[str | None, str] | None:
    """(field, message) for a malformed line, None if it is fine."""
    body = line.rstrip(b"\r\n")
    if not body:
        return None  # DuckDB skips blank lines too
    if b"\r" in body:
        return None, "stray carriage return (\\r) inside the line"
    raw = body.split(b",")
    for i, chunk in enumerate(raw):
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError:
            name = fields[i][0] if i < len(fields) else None
            return name, "not UTF-8 text"
    if len(raw) != len(fields):
        return None, f"expected {len(fields)} comma-separated fields, found {len(raw)}"
    for chunk, (name, kind, required, check) in zip(raw, fields):
        try:
            value = _parse_field(chunk.decode("utf-8"), kind)
        except ValueError as exc:
            return name, f"cannot read as {kind.lower()}: {exc}"
        why = _domain_error(name, value, required, check)
        if why:
            return name, why
    return None


def _where(path: Path, line: int, field: str | None, what: str) -> TraceError:
    at = f", field {field!r}" if field else ""
    return TraceError(f"{path}: line {line}{at}: {what}")


def scan_file(path: Path, fields: list[Field]) -> TraceError | None:
    """Find the first malformed line of one part with a plain Python read (errors only)."""
    gz = path.name.lower().endswith(".gz")
    if gz and path.stat().st_size == 0:
        return _where(path, 1, None, "empty file: not gzip data")
    n = 0
    try:
        for line in _open_lines(path):
            n += 1
            bad = _line_error(line, fields)
            if bad:
                return _where(path, n, bad[0], bad[1])
    except (EOFError, OSError, zlib.error) as exc:
        return _where(path, n + 1, None, f"corrupt or truncated gzip data ({exc})")
    return None


def _locate(parts: Sequence[Path], fields: list[Field], hint: str = "") -> TraceError | None:
    """The first bad line, scanning the parts named in ``hint`` first, then all of them."""
    named = [p for p in parts if str(p) in hint or p.name in hint]
    for p in named + [p for p in parts if p not in named]:
        err = scan_file(p, fields)
        if err:
            return err
    return None


def _rejected(con, rejects: str, fields: list[Field]) -> TraceError | None:
    """TraceError for the first line DuckDB rejected, if any."""
    row = _execute(con,
        f"SELECT s.file_path, e.line, e.column_name, e.error_type, e.error_message, e.csv_line "
        f"FROM {rejects} e JOIN {rejects}_scan s USING (scan_id, file_id) "
        f"ORDER BY s.file_path, e.line, e.error_type NOT IN {COUNT_ERRORS}, e.column_idx "
        f"LIMIT 1").fetchone()
    if row is None:
        return None
    path, line, column, kind, message, text = row
    if kind in COUNT_ERRORS:
        found = len((text or "").split(","))
        return _where(Path(path), line, None,
                      f"expected {len(fields)} comma-separated fields, found {found}")
    if kind == "INVALID ENCODING":
        return _where(Path(path), line, column, "not UTF-8 text")
    return _where(Path(path), line, column, str(message).splitlines()[0])


# --- the conversion --------------------------------------------------------------------

def _execute(con, sql: str):
    """``con.execute(sql)`` on a helper thread while this one waits, so that Ctrl-C is
    seen at once and interrupts the query (``con.interrupt()``, about 0.1 s on the real
    trace); DuckDB notices a SIGINT by itself only between large tasks, 5-7 s into the
    task_events pass. An interrupted query raises KeyboardInterrupt, never an error that
    would send the loader scanning the files for a bad line."""
    import duckdb

    if threading.current_thread() is not threading.main_thread():
        box = {"result": con.execute(sql)}
    else:
        box: dict = {}
        done = threading.Event()  # not Thread.join: an interrupted join can mark a
                                  # running thread stopped (CPython 3.11, bpo-45274's fix)

        def run() -> None:
            try:
                box["result"] = con.execute(sql)
            except BaseException as exc:  # handed to the waiting thread
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=run, name="stratus-duckdb", daemon=True).start()
        try:
            while not done.wait(0.1):
                pass
        except KeyboardInterrupt:
            con.interrupt()
            while not done.wait(0.1):
                pass
            raise
    err = box.get("error")
    if isinstance(err, duckdb.InterruptException):
        raise KeyboardInterrupt
    if err is not None:
        raise err
    return box["result"]


def _connect(workdir: Path, opts: Options):
    try:
        import duckdb
    except ImportError:  # pragma: no cover - duckdb is in the 'data' extra
        raise ConfigError("format google2011 needs duckdb: pip install 'stratus-vc[data]'") from None
    config = {"memory_limit": opts.memory_limit, "temp_directory": str(workdir / "spill"),
              "preserve_insertion_order": True}  # the out-of-order count reads file order
    if opts.threads:
        config["threads"] = opts.threads
    try:
        # a file database: the per-task table lives on disk, not in RAM
        con = duckdb.connect(str(workdir / "google2011.duckdb"), config=config)
        # DuckDB draws a progress bar on *stdout* for queries over 2 s when it deems the
        # session interactive (a __main__ without __file__: python -c, notebooks); stdout is
        # for the one JSON document. A session option: connect() refuses it in config.
        con.execute("SET enable_progress_bar = false")  # instant: no helper thread
        return con
    except duckdb.Error as exc:
        raise ConfigError(f"google2011: cannot start DuckDB with memory_limit="
                          f"{opts.memory_limit!r}: {exc}") from None


def _aggregate_jobs(con, parts: Sequence[Path]) -> None:
    """One row per job: names, user, and whether any event lies outside the trace."""
    _execute(con, f"""
        CREATE TABLE job_agg AS
        WITH ev AS (
            SELECT *, {KEY_SQL} AS k, {_bad_sql(JOB_FIELDS)} AS bad
            FROM {_read_csv(parts, JOB_FIELDS, 'job_rejects')})
        SELECT job_id, count(*) AS n_events,
            min(filename) FILTER (bad) AS bad_file,
            bool_or(ts = 0) AS has_ts0, bool_or(ts = {TS_AFTER}) AS has_ts_after,
            arg_max(logical_job_name, k) FILTER (logical_job_name IS NOT NULL) AS logical_name,
            arg_max(job_name, k) FILTER (job_name IS NOT NULL) AS job_name,
            arg_max("user", k) FILTER ("user" IS NOT NULL) AS "user"
        FROM ev GROUP BY job_id""")


def _aggregate_tasks(con, parts: Sequence[Path]) -> None:
    """One row per (job, task): the lifecycle keys and requests (one streaming pass)."""
    _execute(con, f"""
        CREATE TABLE task_agg AS
        WITH ev AS (
            SELECT *, {KEY_SQL} AS k, {_bad_sql(TASK_FIELDS)} AS bad,
                -- file order is only known here, while the parts stream by
                ts < max(ts) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS late
            FROM {_read_csv(parts, TASK_FIELDS, 'task_rejects')})
        SELECT job_id, task_index, count(*) AS n_events, count(*) FILTER (late) AS n_late,
            min(filename) FILTER (bad) AS bad_file,
            min(ts) FILTER (event_type = {SUBMIT}) AS first_submit_ts,
            count(*) FILTER (event_type = {SUBMIT}) AS n_submit,
            max(k) FILTER (event_type = {SUBMIT}) AS submit_k,
            max(k) FILTER (event_type = {SCHEDULE}) AS sched_k,
            max(k) FILTER (event_type BETWEEN {EVICT} AND {LOST}) AS term_k,
            list(k) FILTER (event_type BETWEEN {EVICT} AND {LOST}) AS term_ks,
            max(ts) AS last_ts, bool_or(ts = 0) AS has_ts0,
            bool_or(ts = {TS_AFTER}) AS has_ts_after,
            arg_max_null(cpu_request, k) FILTER (event_type = {SCHEDULE}) AS cpu_sched,
            arg_max(cpu_request, k) FILTER (cpu_request IS NOT NULL) AS cpu_any,
            arg_max_null(memory_request, k) FILTER (event_type = {SCHEDULE}) AS mem_sched,
            arg_max(memory_request, k) FILTER (memory_request IS NOT NULL) AS mem_any,
            arg_max_null(priority, k) FILTER (event_type = {SCHEDULE}) AS prio_sched,
            arg_max(priority, k) FILTER (priority IS NOT NULL) AS prio_any,
            arg_max("user", k) FILTER ("user" IS NOT NULL) AS "user",
            -- each SUBMIT's key with its different_machine in the low 2 bits: the flag of
            -- the SUBMIT that opened the kept run is picked once that run is known
            list(k * 4 + CASE different_machine WHEN 1 THEN {FLAG_ON} WHEN 0 THEN {FLAG_OFF}
                 ELSE {FLAG_EMPTY} END) FILTER (event_type = {SUBMIT}) AS submit_flags
        FROM ev GROUP BY job_id, task_index""")


# A task's last attempt. S = last SCHEDULE, U = last SUBMIT (keys, so ties are ordered).
# U > S: resubmitted after its last run; that run ended at the first terminal after S and
#        the task's outcome is a later terminal (it ended while pending), if there is one.
# U < S: the run ends at the last terminal after S (a terminal at S's microsecond sorts
#        before an evict-resubmit-reschedule at the same instant; the last one is the end).
# The anti-affinity flag is the one on the last SUBMIT before S: the SUBMIT that opened the
# run whose request and runtime the row carries (the last SUBMIT if never scheduled).
def _task_sql(opts: Options) -> str:
    """Per-task verdict (0 keeps the task, else a JOB_REASONS or TASK_REASONS code)."""
    not_finished = (f"WHEN final_type <> {FINISH} THEN {TASK_NOT_FINISHED}"
                    if opts.task_finish else "")
    return f"""
    CREATE TABLE task AS
    WITH a AS (
        SELECT *, CASE
            WHEN sched_k IS NULL THEN NULL
            WHEN submit_k > sched_k THEN list_min(list_filter(term_ks, lambda x: x > sched_k))
            WHEN term_k > sched_k THEN term_k END AS run_end_k
        FROM task_agg),
    b AS (
        SELECT *, CASE
            WHEN sched_k IS NULL THEN term_k
            WHEN submit_k > sched_k THEN CASE WHEN term_k > run_end_k THEN term_k END
            ELSE run_end_k END AS final_k,
            coalesce(cpu_sched, cpu_any) AS cpu, coalesce(mem_sched, mem_any) AS mem,
            (list_max(list_filter(submit_flags,
                                  lambda x: sched_k IS NULL OR x // 4 < sched_k)) % 4
             )::INTEGER AS open_flag
        FROM a),
    c AS (SELECT *, (final_k % 16)::INTEGER - 2 AS final_type FROM b)
    SELECT job_id, task_index, first_submit_ts, last_ts, n_submit, n_late, n_events,
        final_type, cpu, mem, coalesce(prio_sched, prio_any) AS priority, "user",
        run_end_k // 16 - sched_k // 16 AS runtime_us,
        open_flag = {FLAG_ON} AS anti_affinity, open_flag = {FLAG_EMPTY} AS flag_empty,
        CASE
            WHEN has_ts0 THEN 1
            WHEN has_ts_after THEN 2
            WHEN final_k IS NULL THEN 3
            WHEN first_submit_ts IS NULL THEN 4
            WHEN final_type = {LOST} THEN 6
            WHEN final_type IN ({EVICT}, {FINISH})
                 AND (sched_k IS NULL OR submit_k > sched_k) THEN 5
            WHEN final_type = {EVICT} THEN 7
            WHEN sched_k IS NULL THEN {TASK_NEVER_SCHEDULED}
            {not_finished}
            WHEN coalesce(cpu, 0) + coalesce(mem, 0) <= 0 THEN {TASK_NO_REQUEST}
            ELSE 0 END AS code
    FROM c"""


def _job_sql(opts: Options) -> str:
    """Per-job verdict: 0 keeps the job, else a JOB_REASONS code."""
    window = []
    if opts.start_us is not None:
        window.append(f"WHEN start_ts < {opts.start_us} THEN 8")
    if opts.end_us is not None:
        window.append(f"WHEN end_ts > {opts.end_us} THEN 9")
    finish = "WHEN NOT all_finish THEN 10" if opts.finish_only else ""
    return f"""
        CREATE TABLE job AS
        WITH j AS (
            SELECT job_id, min(first_submit_ts) AS start_ts, max(last_ts) AS end_ts,
                min(code) FILTER (code BETWEEN 1 AND 7) AS task_code,
                bool_and(final_type IS NOT DISTINCT FROM {FINISH}) AS all_finish,
                count(*) AS n_tasks
            FROM task GROUP BY job_id)
        SELECT j.*, e.job_id IS NULL AS no_job_events, e."user" AS job_user,
            coalesce(e.logical_name, e.job_name, 'job-' || j.job_id::VARCHAR) AS job_name,
            CASE
                WHEN coalesce(e.has_ts0, false) OR task_code = 1 THEN 1
                WHEN coalesce(e.has_ts_after, false) OR task_code = 2 THEN 2
                WHEN task_code IS NOT NULL THEN task_code
                {' '.join(window)}
                {finish}
                ELSE 0 END AS jcode
        FROM j LEFT JOIN job_agg e USING (job_id)"""


def _final_sql(opts: Options) -> str:
    """The kept rows in canonical columns (anti_affinity unless ignored)."""
    anti = ", t.anti_affinity" if opts.anti_affinity else ""
    return f"""
    CREATE VIEW final AS
    SELECT t.job_id, t.task_index AS task_id, t.first_submit_ts / 1e6 AS submit_s,
        greatest(t.runtime_us / 1e6, {RUNTIME_FLOOR_S}) AS runtime_s,
        coalesce(t.cpu, 0) * {LARGEST_CPU} AS cpu, coalesce(t.mem, 0) * {LARGEST_MEM_GIB} AS mem_gib,
        coalesce(t."user", j.job_user, 'unknown') AS "user", j.job_name,
        coalesce(t.priority, 0)::BIGINT AS priority{anti}
    FROM task t JOIN job j USING (job_id)
    WHERE j.jcode = 0 AND t.code = 0"""


def _check_input(con, table: str, rejects: str, parts, fields) -> None:
    """Raise TraceError for the first rejected or out-of-domain line of a table."""
    err = _rejected(con, rejects, fields)
    if err:
        raise err
    bad = _execute(con, f"SELECT min(bad_file) FROM {table}").fetchone()[0]
    if bad is not None:
        raise (scan_file(Path(bad), fields)
               or TraceError(f"{bad}: a line breaks the v2.1 schema (empty id or timestamp, "
                             "unknown event type, or negative value)"))


def _run_reading(con, step, parts, fields, what: str) -> None:
    """Run a reading step; any DuckDB failure becomes a TraceError naming the file/line."""
    import duckdb

    try:
        step(con, parts)
    except duckdb.OutOfMemoryException as exc:
        raise TraceError(f"{parts[0].parent}: DuckDB ran out of memory reading {what}; "
                         f"raise memory_limit or check temp_directory space ({exc})") from None
    except duckdb.Error as exc:
        msg = str(exc)
        err = _locate(parts, fields, hint=msg)
        raise (err or TraceError(f"{parts[0].parent}: cannot read {what}: "
                                 f"{msg.splitlines()[0] if msg else type(exc).__name__}")) from None


def _run_derived(con, root: Path, statements: Sequence[str]) -> None:
    """The per-task and per-job tables; only resources can fail here, not the input."""
    import duckdb

    try:
        for sql in statements:
            _execute(con, sql)
    except duckdb.OutOfMemoryException as exc:
        raise TraceError(f"{root}: DuckDB ran out of memory; raise memory_limit ({exc})") from None


def _count_report(con, report: LoadReport, opts: Options) -> int:
    """Fill the report from the per-task and per-job tables; return rows kept."""
    report.rows_read, late = _execute(con,
        "SELECT coalesce(sum(n_events), 0), coalesce(sum(n_late), 0) FROM task").fetchone()
    n_job_events = _execute(con, "SELECT coalesce(sum(n_events), 0) FROM job_agg").fetchone()[0]
    report.note(f"read {report.rows_read:,} task events and {n_job_events:,} job events")
    for code, n in _execute(con, "SELECT jcode, count(*) FROM job WHERE jcode > 0 "
                               "GROUP BY jcode ORDER BY jcode").fetchall():
        report.drop(JOB_REASONS[code], n)
    for code, n in _execute(con,
            "SELECT code, count(*) FROM task JOIN job USING (job_id) WHERE jcode = 0 "
            "AND code >= 20 GROUP BY code ORDER BY code").fetchall():
        report.drop(TASK_REASONS[code], n)
    in_dropped = _execute(con, "SELECT coalesce(sum(n_tasks), 0) FROM job WHERE jcode > 0"
                             ).fetchone()[0]
    _note(report, in_dropped, "tasks left out with their dropped jobs")
    _note(report, late, "task events were earlier than an event before them in file order "
                        "(all events are ordered by timestamp, ties in lifecycle order)")
    kept = _execute(con, f"""
        SELECT count(*),
            count(*) FILTER (n_submit > 1),
            count(*) FILTER (final_type = {FAIL}),
            count(*) FILTER (final_type = {KILL}),
            count(*) FILTER (runtime_us <= 0),
            count(*) FILTER (cpu IS NULL OR mem IS NULL),
            count(*) FILTER (cpu > 1 OR mem > 1),
            count(*) FILTER (t."user" IS NULL),
            count(*) FILTER (t.priority IS NULL),
            count(DISTINCT job_id) FILTER (no_job_events),
            count(*) FILTER (anti_affinity), count(DISTINCT job_id) FILTER (anti_affinity),
            count(*) FILTER (flag_empty)
        FROM task t JOIN job j USING (job_id) WHERE jcode = 0 AND code = 0""").fetchone()
    n_rows, resub, fail, kill, zero, one_dim, over, no_user, no_prio, no_events = kept[:10]
    flagged, flagged_jobs, flag_empty = kept[10:]
    _note(report, resub, "kept tasks were resubmitted; runtime is their last SCHEDULE->end run")
    _note(report, fail, "kept tasks ended in FAIL; runtime is last SCHEDULE->FAIL")
    _note(report, kill, "kept tasks ended in KILL; runtime is last SCHEDULE->end of that run")
    _note(report, zero, f"kept tasks had a zero-length run; runtime raised to "
                        f"{RUNTIME_FLOOR_S:g} s (1 us)")
    _note(report, one_dim, "kept tasks lacked a CPU or a memory request; that dimension is 0")
    _note(report, over, "kept tasks request more than the largest machine (> 1.0)")
    _note(report, no_user, "kept tasks had no user; taken from job_events or 'unknown'")
    _note(report, no_prio, "kept tasks had no priority; set to 0")
    _note(report, no_events, "kept jobs have no job_events row; named job-<id>")
    if opts.start_us is not None or opts.end_us is not None:
        lo = "-inf" if opts.start_us is None else f"{opts.start_us / 1e6:g}"
        hi = "+inf" if opts.end_us is None else f"{opts.end_us / 1e6:g}"
        report.note(f"window [{lo}, {hi}] s of trace time: whole jobs only (Stratus §4.2)")
    if opts.finish_only:
        report.note("terminal=finish: only jobs all of whose tasks FINISH")
    if opts.task_finish:
        report.note("terminal=task-finish: only tasks whose final event is FINISH, their jobs "
                    "otherwise whole")
    _anti_affinity_notes(report, opts, flagged, flagged_jobs, flag_empty)
    return int(n_rows)


def _anti_affinity_notes(report: LoadReport, opts: Options, tasks: int, jobs: int,
                         empty: int) -> None:
    what = f"{int(tasks):,} kept tasks in {int(jobs):,} jobs carry different_machine"
    if not opts.anti_affinity:
        report.note(f"anti_affinity=ignore: the column is left out ({what})")
        return
    report.note(f"{what} (anti_affinity = true)")
    _note(report, empty, "kept tasks' SUBMIT had no different_machine value; "
                         "anti_affinity = false")


def _note(report: LoadReport, n: int, text: str) -> None:
    if n:
        report.note(f"{int(n):,} {text}")


def _write_parquet(con, out: Path, name: str, report: LoadReport) -> None:
    """COPY the kept rows, sorted, with the load report in the Parquet key-value metadata."""
    import duckdb

    meta = {"stratus.trace.name": name, "stratus.load_report": json.dumps(report.as_dict())}
    kv = "{" + ", ".join(f"{_sql_str(k)}: {_sql_str(v)}" for k, v in meta.items()) + "}"
    tmp = tempnames.fresh(out)
    try:
        _execute(con, f"COPY (SELECT * FROM final ORDER BY submit_s, job_id, task_id) "
                    f"TO {_sql_str(str(tmp))} (FORMAT parquet, KV_METADATA {kv})")
        os.replace(tmp, out)
    except (duckdb.Error, OSError) as exc:
        raise TraceError(f"{out}: cannot write the Parquet output: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def _workdir(opts: Options) -> tempfile.TemporaryDirectory:
    """A private directory for DuckDB's database and spill files, under temp_directory."""
    parent = opts.temp_directory
    try:
        if parent:
            Path(parent).mkdir(parents=True, exist_ok=True)
        return tempfile.TemporaryDirectory(prefix="stratus-g2011-", dir=parent)
    except OSError as exc:
        raise ConfigError(f"google2011 option temp_directory={parent!r}: {exc}") from None


def _events_span(con) -> list[float] | None:
    """[first SUBMIT, last event] of the task events in seconds of trace time, the sentinels
    (0: before the trace, 2^63-1: after it) left out; None when there is none. A window
    given as options is judged against it (stratus.traces.spec.TraceSource.covers)."""
    lo, hi = _execute(con, f"SELECT min(first_submit_ts) FILTER (first_submit_ts > 0), "
                           f"max(last_ts) FILTER (last_ts < {TS_AFTER}) FROM task_agg"
                      ).fetchone()
    return None if lo is None or hi is None else [lo / 1e6, hi / 1e6]


def convert(path: str | Path, out_parquet: str | Path, **options) -> LoadReport:
    """Convert a Google 2011 trace directory to canonical Parquet; return the LoadReport."""
    return _convert(path, out_parquet, options)[0]


def _convert(path, out_parquet, options: dict) -> tuple[LoadReport, list[float] | None]:
    """``convert``, and the span of the task events (``_events_span``)."""
    opts = parse_options(options)
    root = Path(path)
    if not root.is_dir():
        raise TraceError(f"{root}: not a directory (a Google 2011 trace is a directory with "
                         "job_events/ and task_events/)")
    job_parts, task_parts = find_parts(root, "job_events"), find_parts(root, "task_events")
    out = Path(out_parquet)
    report = LoadReport(str(root))
    with _workdir(opts) as tmp:
        con = _connect(Path(tmp), opts)
        try:
            _run_reading(con, _aggregate_jobs, job_parts, JOB_FIELDS, "job_events")
            _check_input(con, "job_agg", "job_rejects", job_parts, JOB_FIELDS)
            _run_reading(con, _aggregate_tasks, task_parts, TASK_FIELDS, "task_events")
            _check_input(con, "task_agg", "task_rejects", task_parts, TASK_FIELDS)
            _run_derived(con, root, [_task_sql(opts), _job_sql(opts), _final_sql(opts)])
            n_rows = _count_report(con, report, opts)
            span = _events_span(con)
            report.note(f"wrote {n_rows:,} tasks")
            _write_parquet(con, out, f"google2011:{root.name}", report)
        finally:
            con.close()
    return report, span


def load(path: str | Path, **options) -> Trace:
    """Load a Google 2011 trace directory as a Trace (via a temporary Parquet file)."""
    tmp = Path(tempfile.mkdtemp(prefix="stratus-g2011-out-"))
    try:
        out = tmp / "trace.parquet"
        report, span = _convert(path, out, options)
        trace = Trace.from_parquet(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    trace.meta.update(path=str(path), format="google2011", options=dict(options),
                      load_report=report.as_dict(), events_span_s=span)
    return trace
