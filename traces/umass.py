"""The UMass/LSF job table of the waiting-policy papers' public simulator (000 §5-6).

Columns (all required; others are ignored and listed in a note):

    userid                 submitting user (any text or number)
    wallclock_runtime_sec  true runtime, seconds
    wallclock_limit_sec    the user's run-time limit, seconds (<= 0 or empty: none)
    num_cores              cores requested
    total_MB_req           memory requested for the whole job, MB
    status                 LSF final status, free text (DONE, EXIT, ...)
    time                   submit time: Unix seconds or a datetime string (ISO /
                           "YYYY-MM-DD HH:MM:SS"; naive = UTC); each row may use either
    job_id                 LSF job id (an integer)

from CSV (.csv, .csv.gz), Parquet or HDF5 (written by pandas ``to_hdf``, read in a child
process). Options: ``key=`` picks the HDF5 dataset when the file has several;
``status=DONE[,EXIT...]`` keeps only those statuses (case-insensitive).

Mapping, one task per job (an LSF job here is one allocation):
    cpu = num_cores; mem_gib = total_MB_req / 1024 (LSF's "MB" taken as MiB, 2**20 bytes);
    runtime_s = wallclock_runtime_sec; estimate_s = wallclock_limit_sec
    when > 0 (kept only if every kept job has one); submit_s = time - the earliest time of
    any row read (meta["origin_unix_s"]), so status filters do not shift the time axis;
    user = str(userid); job_name = the user (the schema has no job or application name, and
    the user is the closest proxy for "the same program again"); no queue column;
    priority 0.
Rows need not be in time order. A job_id seen more than once is an LSF requeue or
resubmission: the last submission by time (file order among equal times) is kept and the
earlier ones are dropped as "resubmitted". Then the status filter, then jobs with runtime
<= 0, then jobs requesting neither cores nor memory are dropped (each counted). A value
that is not a number, a negative count or an unparsable time is a TraceError.
All drops are counted in meta["load_report"]; kept jobs are counted by status in a note.
Line numbers in messages are 1-based CSV lines (header = 1); Parquet/HDF5 rows are 0-based.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from stratus.base.errors import ConfigError, TraceError
from stratus.traces.schema import LoadReport, Trace
from stratus.traces.tables import (
    Table,
    check_options,
    drop_blank,
    first_negative,
    named_columns,
    numbers,
    option_text,
    optional_times,
    read_csv_table,
    read_parquet_table,
    seconds,
    strings,
    table_kind,
)

FORMAT = "umass"
COLUMNS = ("userid", "wallclock_runtime_sec", "wallclock_limit_sec", "num_cores",
           "total_MB_req", "status", "time", "job_id")
TEXT_COLUMNS = ("userid", "status", "time")
MIB_PER_GIB = 1024.0


def load(path: Path, **options) -> Trace:
    """Read a UMass/LSF job table (CSV, CSV.gz, Parquet or HDF5) as a Trace."""
    path = Path(path)
    check_options(FORMAT, options, ("key", "status"))
    wanted = _status_option(options)
    table = _read(path, option_text(FORMAT, options, "key", None))
    table.require(COLUMNS)
    report = LoadReport(table.source, rows_read=len(table.frame))
    drop_blank(table, report)
    extra = [c for c in table.frame.columns if c not in COLUMNS]
    if extra:
        report.note(f"ignored columns: {', '.join(map(str, extra))}")
    jobs = _parse(table)
    origin = float(jobs["time"].min()) if len(jobs) else 0.0
    jobs = _last_submissions(jobs, report)
    jobs = _select_status(jobs, wanted, report)
    keep = jobs["runtime"].to_numpy() > 0
    report.drop("jobs with wallclock_runtime_sec <= 0", int((~keep).sum()))
    empty = keep & ((jobs["cores"] + jobs["mem_mb"]).to_numpy() <= 0)
    report.drop("jobs requesting no cores and no memory", int(empty.sum()))
    jobs = jobs[keep & ~empty]
    if jobs.empty:
        dropped = "; ".join(f"{n:,} {why}" for why, n in report.dropped.items()) or "no rows"
        raise TraceError(f"{table.source}: no usable jobs ({dropped})")
    counts = Counter(jobs["status"].tolist())
    report.note("kept jobs by status: " + ", ".join(
        f"{s or '(empty)'}: {n:,}" for s, n in sorted(counts.items(), key=lambda kv: -kv[1])))
    frame = _canonical(jobs, origin, report)
    meta = {"path": str(path), "format": FORMAT, "origin_unix_s": origin,
            "unknown_columns": ["priority"],
            "options": {k: str(v) for k, v in options.items()},
            "status_counts": {s: int(n) for s, n in counts.items()},
            "load_report": report.as_dict()}
    return Trace(frame, name=path.name, meta=meta)


def _read(path: Path, key: str | None) -> Table:
    kind = table_kind(path)
    if key is not None and kind != "hdf5":
        raise ConfigError(f"format {FORMAT!r}: option 'key' applies to HDF5 files only, "
                          f"but {path} is read as {kind}")
    if kind == "csv":
        return read_csv_table(path, TEXT_COLUMNS)
    if kind == "parquet":
        return read_parquet_table(path)
    return _read_hdf(path, key)


def _status_option(options: dict) -> set[str] | None:
    text = option_text(FORMAT, options, "status", None)
    if text is None:
        return None
    wanted = {s.strip().upper() for s in text.split(",") if s.strip()}
    if not wanted:
        raise ConfigError(f"format {FORMAT!r}: option 'status' names no status, got {text!r}")
    return wanted


# Runs in a child process: argv = path, dataset name ("" = none), output pickle. Prints one
# JSON line: the file's dataset names, and whether the dataset was read, or the error.
_HDF_CHILD = r"""
import sys
from stratus.traces.umass import _hdf_read_into
print(_hdf_read_into(*sys.argv[1:4]))
"""


def _hdf_read_into(path: str, name: str, out: str) -> str:
    """In the reader process: pickle the dataset to ``out``; one JSON line of what was found."""
    try:
        with pd.HDFStore(path, mode="r") as store:
            keys = store.keys()
            if not name and len(keys) == 1:
                name = keys[0]
            read = name in keys
            if read:
                pd.to_pickle(store.select(name), out)
        return json.dumps({"keys": keys, "read": name if read else None})
    except Exception as exc:
        return json.dumps({"error": f"{type(exc).__name__}: {exc}"})


def _forked_reader(path: str, name: str, out: str, answer: str) -> None:
    import faulthandler

    faulthandler.disable()  # a crash here is expected and reported: no dump on stderr
    Path(answer).write_text(_hdf_read_into(path, name, out))


def _read_hdf(path: Path, key: str | None) -> Table:
    """The one dataset of an HDF5 file, or the ``key`` one; positions become row numbers.

    Read in a child process: the HDF5 C library can crash (SIGSEGV) on a damaged file,
    which no Python handler can catch; in a child the crash becomes a TraceError naming the
    file. On Linux, when this process runs one thread, the child is a fork of it (~0.05 s;
    pandas is already loaded); else a new interpreter (~1 s: pandas and PyTables imported
    again): a fork copies the locks other threads hold (a progress bar's, a logger's) and
    could hang on one, which no timeout would tell from a long read."""
    source = str(path)
    name = "" if key is None else key if key.startswith("/") else "/" + key
    with tempfile.TemporaryDirectory(prefix="stratus-hdf-") as tmp:
        out = Path(tmp) / "frame.pkl"
        if _may_fork():
            proc = _run_forked(str(path), name, str(out), Path(tmp) / "answer.json")
        else:
            proc = subprocess.run([sys.executable, "-c", _HDF_CHILD, str(path), name, str(out)],
                                  capture_output=True, text=True, check=False)
        if proc.returncode < 0:
            raise TraceError(f"{source}: the HDF5 library crashed reading it (signal "
                             f"{-proc.returncode}); the file is damaged")
        result = _child_result(source, proc)
        _hdf_key(source, result["keys"], key)
        frame = pd.read_pickle(out)
    if not isinstance(frame, pd.DataFrame):
        raise TraceError(f"{source}: HDF5 dataset {result['read']!r} is not a table")
    return Table(named_columns(frame, source), source, "hdf5")


def _may_fork() -> bool:
    import threading

    return sys.platform == "linux" and threading.active_count() == 1


def _run_forked(path: str, name: str, out: str, answer: Path) -> subprocess.CompletedProcess:
    """The reader in a forked child, reported as :func:`subprocess.run` would report it."""
    import multiprocessing

    child = multiprocessing.get_context("fork").Process(
        target=_forked_reader, args=(path, name, out, str(answer)), daemon=True)
    child.start()
    try:
        child.join()
    finally:  # Ctrl-C: the child does not outlive the load
        if child.is_alive():
            child.kill()
            child.join()
    text = answer.read_text() if answer.exists() else ""
    return subprocess.CompletedProcess([], child.exitcode, text,
                                       "" if text else "the reader wrote no answer")


def _child_result(source: str, proc: subprocess.CompletedProcess) -> dict:
    lines = proc.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else None
    except ValueError:
        result = None
    if proc.returncode != 0 or not isinstance(result, dict):
        tail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise TraceError(f"{source}: cannot read as HDF5 (reader exited with "
                         f"{proc.returncode}: {tail})")
    if "error" in result:
        raise TraceError(f"{source}: cannot read as HDF5 ({result['error']})")
    return result


def _hdf_key(source: str, keys: list[str], key: str | None) -> None:
    """Check the dataset choice against the file's datasets."""
    if key is None:
        if not keys:
            raise TraceError(f"{source}: the HDF5 file holds no pandas dataset")
        if len(keys) > 1:
            raise ConfigError(f"{source}: the HDF5 file holds several datasets "
                              f"({', '.join(keys)}); pick one with option key=")
        return
    name = key if key.startswith("/") else "/" + key
    if name not in keys:
        raise TraceError(f"{source}: no HDF5 dataset {key!r} (datasets: "
                         f"{', '.join(keys) or 'none'})")


def _parse(table: Table) -> pd.DataFrame:
    """Typed columns, one row per input row, index = file position; TraceError at the first
    bad value."""
    job = numbers(table, "job_id", integer=True)
    runtime = numbers(table, "wallclock_runtime_sec")
    limit = numbers(table, "wallclock_limit_sec", empty_ok=True)
    cores = numbers(table, "num_cores")
    mem_mb = numbers(table, "total_MB_req")
    first_negative(table, cores, "num_cores")
    first_negative(table, mem_mb, "total_MB_req")
    t = seconds(table, "time", "auto")
    user = strings(table, "userid", empty_ok=False)
    status = strings(table, "status")
    return pd.DataFrame({"job_id": job.astype(np.int64), "time": t, "runtime": runtime,
                         "limit": limit, "cores": cores, "mem_mb": mem_mb, "user": user,
                         "status": status}, index=table.frame.index)


def _last_submissions(jobs: pd.DataFrame, report: LoadReport) -> pd.DataFrame:
    """Keep each job_id's last submission by time (file order breaks ties)."""
    ordered = jobs.sort_values("time", kind="stable")
    earlier = ordered.duplicated("job_id", keep="last").to_numpy()
    report.drop("resubmitted (an earlier submission of a job_id seen again later)",
                int(earlier.sum()))
    return ordered[~earlier]


def _select_status(jobs: pd.DataFrame, wanted: set[str] | None,
                   report: LoadReport) -> pd.DataFrame:
    if wanted is None:
        return jobs
    keep = jobs["status"].str.upper().isin(wanted).to_numpy()
    report.drop(f"jobs whose status is not {', '.join(sorted(wanted))}", int((~keep).sum()))
    return jobs[keep]


def _canonical(jobs: pd.DataFrame, origin: float, report: LoadReport) -> pd.DataFrame:
    frame = pd.DataFrame({
        "job_id": jobs["job_id"].to_numpy(),
        "task_id": np.zeros(len(jobs), dtype=np.int64),
        "submit_s": jobs["time"].to_numpy() - origin,
        "runtime_s": jobs["runtime"].to_numpy(),
        "cpu": jobs["cores"].to_numpy(),
        "mem_gib": jobs["mem_mb"].to_numpy() / MIB_PER_GIB,
        "user": jobs["user"].to_numpy(),
        "job_name": jobs["user"].to_numpy(),
        "priority": np.zeros(len(jobs), dtype=np.int64),
    })
    limit = jobs["limit"].to_numpy()
    optional_times(frame, "estimate_s", np.where(limit > 0, limit, np.nan), report,
                   "wallclock_limit_sec > 0")
    return frame
