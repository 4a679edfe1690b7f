"""Standard Workload Format 2.2 (Parallel Workloads Archive), ``.swf`` or ``.swf.gz``.

Lines starting with ';' are comments; "; Key: value" header fields go to
meta["swf_header"] (repeated keys such as Note/Queue become lists, indented comment lines
continue the previous value, and the counts MaxJobs, MaxProcs, UnixStartTime, ... become
ints). Every other non-blank line is a job with exactly 18 whitespace-separated numbers:

     1 job number            7 used memory (KB/proc)     13 group ID
     2 submit time (s)       8 requested processors      14 executable number
     3 wait time             9 requested time (s)        15 queue number
     4 run time (s)         10 requested memory (KB/proc) 16 partition number
     5 allocated processors 11 status                    17 preceding job number
     6 average CPU time     12 user ID                   18 think time

-1 means missing (any negative value is read as missing: none can be a real quantity),
except that a run time below -1 is reported as invalid, not as missing.
The file is streamed line by line (gzip is detected by its magic bytes); any malformed
data line (field count, a non-number, a fractional id or count, non-ASCII/non-UTF-8 bytes,
a truncated gzip stream) is a TraceError "FILE:LINE: ...".

Mapping, per job (an SWF job is rigid: it needs all its processors at once):
    job_id = job number; submit_s = submit time (seconds from the log's UnixStartTime,
    kept in meta["origin_unix_s"]); one task with cpu = processors (allocated, else
    requested); with ``per_processor=1`` one 1-vCPU task per processor instead.
    runtime_s = run time; run time missing or negative -> the job is dropped and counted
    (under its own reason for each); run time 0
    means "under the log's 1 s resolution" and is raised to ``min_runtime_s`` (default 1.0),
    counted in a note. estimate_s = requested time when >= 0 (the user's estimate; the
    column is kept only if every kept job has one). mem_gib = used memory, else requested
    memory (KB per processor x processors / 2**20), else ``mem_per_proc_gib`` per
    processor (default 4.0 = the m4 shape's GiB per vCPU, so a job with no memory data is
    balanced on m4: memory neither dominates its packing nor vanishes from it).
    user = "u<user id>" ("unknown" if missing); job_name = "app-<executable number>"
    ("job-<job number>" if missing); queue = "q<queue number>" ("" if missing); priority 0.
Jobs of every status are kept and counted by status in a note. A job number seen twice is
a TraceError naming both lines (SWF partial-execution records, status 2/3/4 sharing a job
number, are not supported).
"""

from __future__ import annotations

import gzip
import re
import zlib
from array import array
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from stratus.base.errors import TraceError, shown
from stratus.traces.schema import LoadReport, Trace
from stratus.traces.tables import (
    GZIP_MAGIC,
    MAX_EXACT_INT,
    check_options,
    option_bool,
    option_float,
    optional_times,
    sniff,
)

FORMAT = "swf"
N_FIELDS = 18
FIELD_NAMES = (
    "job number", "submit time", "wait time", "run time", "allocated processors",
    "average CPU time", "used memory", "requested processors", "requested time",
    "requested memory", "status", "user ID", "group ID", "executable number",
    "queue number", "partition number", "preceding job number", "think time",
)
# 0-based indices of the fields used below
JOB, SUBMIT, RUN, ALLOC, USED_MEM, REQ_PROCS, REQ_TIME, REQ_MEM = 0, 1, 3, 4, 6, 7, 8, 9
STATUS, USER, EXE, QUEUE = 10, 11, 13, 14
# ids, counts and codes must be whole numbers; times and memory may be fractional
INTEGER_FIELDS = (0, 4, 7, 10, 11, 12, 13, 14, 15, 16)
KIB_PER_GIB = 2.0**20
STATUS_NAMES = {-1: "unknown", 0: "failed", 1: "completed", 2: "partial", 3: "partial-completed",
                4: "partial-failed", 5: "cancelled"}
INT_HEADER_KEYS = {"UnixStartTime", "TimeZone", "MaxJobs", "MaxRecords", "MaxNodes", "MaxProcs",
                   "MaxRuntime", "MaxMemory", "MaxQueues", "MaxPartitions"}
# "; Key: value" - the key right after ';' (an indented line continues the previous value;
# requiring whitespace after ':' keeps "http://..." continuations from looking like keys)
HEADER_RE = re.compile(r";\s{0,2}([A-Za-z][A-Za-z0-9_]*):(?:\s+(.*?))?\s*$")
CONTINUATION_RE = re.compile(r";\s+(\S.*?)\s*$")


def load(path: Path, **options) -> Trace:
    """Read an SWF 2.2 log (optionally gzipped) as a Trace; see the module docstring."""
    path = Path(path)
    check_options(FORMAT, options, ("per_processor", "min_runtime_s", "mem_per_proc_gib"))
    per_proc = option_bool(FORMAT, options, "per_processor", False)
    min_rt = option_float(FORMAT, options, "min_runtime_s", 1.0, 0.0, inclusive=False)
    mem_default = option_float(FORMAT, options, "mem_per_proc_gib", 4.0)
    source = str(path)
    report = LoadReport(source)
    values, lines, header = _read(path, source, report)
    report.rows_read = len(lines)
    if not len(lines):
        raise TraceError(f"{source}: no job lines (only comments or nothing)")
    _check_values(source, values, lines)
    frame, status_counts = _jobs(source, values, lines, report, min_rt, mem_default, per_proc)
    meta = {"path": source, "format": FORMAT,
            "options": {"per_processor": per_proc, "min_runtime_s": min_rt,
                        "mem_per_proc_gib": mem_default},
            "swf_header": header, "swf_status_counts": status_counts,
            "load_report": report.as_dict(), "unknown_columns": ["priority"]}
    if isinstance(header.get("UnixStartTime"), int):
        meta["origin_unix_s"] = header["UnixStartTime"]
    return Trace(frame, name=path.name, meta=meta)


# --- reading ----------------------------------------------------------------------------


def _raw_lines(path: Path, source: str) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw bytes) of a plain or gzipped file, streamed."""
    compressed = sniff(path).startswith(GZIP_MAGIC)
    lineno = 0
    try:
        with (gzip.open(path, "rb") if compressed else path.open("rb")) as fh:
            for raw in fh:
                lineno += 1
                yield lineno, raw
    except (OSError, EOFError, zlib.error) as exc:
        # a truncated or corrupt gzip stream fails while reading the next line
        raise TraceError(f"{source}:{lineno + 1}: cannot read the file past line {lineno}: "
                         f"{exc}") from None


def _read(path: Path, source: str, report: LoadReport):
    """(values float64[n, 18], line numbers int64[n], header dict); per-line checks here."""
    values = array("d")
    lines = array("q")
    header: dict = {}
    last_key: str | None = None
    blank = 0
    bad_comments: list[int] = []
    for lineno, raw in _raw_lines(path, source):
        body = raw.strip()
        if not body:
            blank += 1
            continue
        if body.startswith(b";"):
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                # a comment never changes the data: keep reading, but say so
                text = body.decode("utf-8", errors="replace")
                bad_comments.append(lineno)
            last_key = _header_line(header, text, last_key)
            continue
        last_key = None
        values.extend(_data_line(source, lineno, body))
        lines.append(lineno)
    if blank:
        report.note(f"blank lines ignored: {blank:,}")
    if bad_comments:
        report.note(f"comment lines not valid UTF-8 (decoded with replacement): "
                    f"{len(bad_comments):,}, first line {bad_comments[0]}")
    _typed_header(header, report)
    vals = np.array(values, dtype=np.float64).reshape(-1, N_FIELDS)
    return vals, np.array(lines, dtype=np.int64), header


def _data_line(source: str, lineno: int, body: bytes) -> list[float]:
    """The 18 numbers of a data line; TraceError "FILE:LINE: ..." if it is malformed."""
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceError(f"{source}:{lineno}: not valid UTF-8 (byte "
                             f"0x{body[exc.start]:02x})") from None
        raise TraceError(f"{source}:{lineno}: non-ASCII character in a data line")
    tokens = body.decode("ascii").split()
    if len(tokens) != N_FIELDS:
        raise TraceError(f"{source}:{lineno}: expected {N_FIELDS} fields, found {len(tokens)}")
    try:
        # float() also takes "nan", "inf" and "1_0"; those are caught below / in _check_values
        vals = [float(t) for t in tokens]
    except ValueError:
        vals = None
    if vals is None or b"_" in body:
        for i, tok in enumerate(tokens):
            if "_" in tok or not _is_number(tok):
                raise TraceError(f"{source}:{lineno}: field {i + 1} ({FIELD_NAMES[i]}) is not "
                                 f"a number: {tok[:30]!r}") from None
    return vals


def _is_number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True


def _header_line(header: dict, text: str, last_key: str | None) -> str | None:
    """Record one comment line; return the key a following indented line would continue."""
    m = HEADER_RE.match(text)
    if m:
        key, value = m.group(1), m.group(2) or ""
        if key in header:
            prev = header[key]
            header[key] = [*prev, value] if isinstance(prev, list) else [prev, value]
        else:
            header[key] = value
        return key
    m = CONTINUATION_RE.match(text)
    if m and last_key is not None:
        prev = header[last_key]
        if isinstance(prev, list):
            prev[-1] = f"{prev[-1]} {m.group(1)}".strip()
        else:
            header[last_key] = f"{prev} {m.group(1)}".strip()
        return last_key
    return None  # a bare ';' or free text ends any continuation


def _typed_header(header: dict, report: LoadReport) -> None:
    for key in INT_HEADER_KEYS & header.keys():
        value = header[key]
        try:
            header[key] = int(value)
        except (TypeError, ValueError):
            report.note(f"header field {key} is not an integer: {value!r} (kept as text)")


def _check_values(source: str, values: np.ndarray, lines: np.ndarray) -> None:
    """Whole-array checks, reported at the first offending line."""
    finite = np.isfinite(values)
    if not finite.all():
        _raise_at(source, values, lines, ~finite, "is not a finite number")
    ints = values[:, INTEGER_FIELDS]
    frac = (ints != np.round(ints)) | (np.abs(ints) >= MAX_EXACT_INT)
    if frac.any():
        mask = np.zeros_like(finite)
        mask[:, INTEGER_FIELDS] = frac
        _raise_at(source, values, lines, mask, "must be a whole number")
    bad_job = values[:, JOB] < 0
    if bad_job.any():
        r = int(np.flatnonzero(bad_job)[0])
        raise TraceError(f"{source}:{lines[r]}: field 1 (job number) is missing "
                         f"({values[r, JOB]:g}); every job needs one")
    _check_duplicates(source, values[:, JOB], lines)


def _raise_at(source: str, values: np.ndarray, lines: np.ndarray, mask: np.ndarray,
              what: str) -> None:
    r = int(np.flatnonzero(mask.any(axis=1))[0])
    c = int(np.flatnonzero(mask[r])[0])
    raise TraceError(f"{source}:{lines[r]}: field {c + 1} ({FIELD_NAMES[c]}) {what}, "
                     f"got {shown(values[r, c])}")


def _check_duplicates(source: str, jobs: np.ndarray, lines: np.ndarray) -> None:
    order = np.argsort(jobs, kind="stable")
    same = np.flatnonzero(jobs[order][1:] == jobs[order][:-1])
    if same.size:
        # of all repeats, report the one whose second line comes first in the file
        k = min(same.tolist(), key=lambda k: lines[order[k + 1]])
        first, second = lines[order[k]], lines[order[k + 1]]
        raise TraceError(f"{source}:{second}: job number {int(jobs[order[k]])} already used "
                         f"on line {first} (SWF partial-execution records sharing a job "
                         "number are not supported)")


# --- mapping ----------------------------------------------------------------------------


def _jobs(source: str, v: np.ndarray, lines: np.ndarray, report: LoadReport, min_rt: float,
          mem_default: float, per_proc: bool) -> tuple[pd.DataFrame, dict[str, int]]:
    """The canonical frame and the kept jobs' counts by status."""
    procs = np.where(v[:, ALLOC] > 0, v[:, ALLOC], v[:, REQ_PROCS])
    reasons = [
        (v[:, RUN] == -1, "jobs with run time missing (-1)"),
        # -1 is SWF's "missing"; any other negative run time is an invalid value
        (v[:, RUN] < 0, "jobs with an invalid negative run time (not -1, SWF's missing)"),
        (v[:, SUBMIT] < 0, "jobs with submit time missing (-1)"),
        (procs <= 0, "jobs with no processor count (allocated and requested missing)"),
    ]
    keep = np.ones(len(v), dtype=bool)
    for bad, why in reasons:  # a job is counted once, under its first reason
        report.drop(why, int((bad & keep).sum()))
        keep &= ~bad
    v, procs = v[keep], procs[keep]
    if not len(v):
        dropped = "; ".join(f"{n:,} {why}" for why, n in report.dropped.items())
        raise TraceError(f"{source}: no usable jobs ({dropped})")
    runtime = v[:, RUN].copy()
    zero = runtime == 0
    if zero.any():
        runtime[zero] = min_rt
        report.note(f"run time 0 (under the log's 1 s resolution) raised to {min_rt:g} s: "
                    f"{int(zero.sum()):,} jobs")
    mem_per_proc = _memory(v, mem_default, report)
    frame = pd.DataFrame({
        "job_id": v[:, JOB].astype(np.int64),
        "task_id": np.zeros(len(v), dtype=np.int64),
        "submit_s": v[:, SUBMIT],
        "runtime_s": runtime,
        "cpu": procs,
        "mem_gib": mem_per_proc * procs,
        "user": _labels("u", v[:, USER], "unknown"),
        "job_name": np.where(v[:, EXE] >= 0, _labels("app-", v[:, EXE], ""),
                             _labels("job-", v[:, JOB], "")),
        "priority": np.zeros(len(v), dtype=np.int64),
        "queue": _labels("q", v[:, QUEUE], ""),
    })
    est = v[:, REQ_TIME]
    optional_times(frame, "estimate_s", np.where(est >= 0, est, np.nan), report,
                   "requested time")
    if per_proc:
        frame = _split(frame, procs.astype(np.int64), mem_per_proc, report)
    counts = Counter(v[:, STATUS].astype(np.int64).tolist())
    named = {f"{s} ({STATUS_NAMES.get(s, 'other')})": n for s, n in sorted(counts.items())}
    report.note("kept jobs by status: " + ", ".join(f"{k}: {n:,}" for k, n in named.items()))
    return frame, named


def _memory(v: np.ndarray, mem_default: float, report: LoadReport) -> np.ndarray:
    """GiB per processor: used, else requested, else the default; sources in a note."""
    used, req = v[:, USED_MEM] > 0, v[:, REQ_MEM] > 0
    mem = np.where(used, v[:, USED_MEM], np.where(req, v[:, REQ_MEM], np.nan)) / KIB_PER_GIB
    default = np.isnan(mem)
    mem[default] = mem_default
    report.note(f"memory per processor from used memory: {int(used.sum()):,} jobs, from "
                f"requested memory: {int((req & ~used).sum()):,}, default "
                f"{mem_default:g} GiB: {int(default.sum()):,}")
    return mem


def _labels(prefix: str, ids: np.ndarray, missing: str) -> np.ndarray:
    """prefix + integer id, or ``missing`` for a negative (missing) id."""
    return np.array([f"{prefix}{int(x)}" if x >= 0 else missing for x in ids.tolist()],
                    dtype=object)


def _split(frame: pd.DataFrame, procs: np.ndarray, mem_per_proc: np.ndarray,
           report: LoadReport) -> pd.DataFrame:
    """One 1-vCPU task per processor (per_processor=1), each with one processor's memory."""
    out = frame.loc[frame.index.repeat(procs)].reset_index(drop=True)
    out["task_id"] = out.groupby("job_id", sort=False).cumcount().astype(np.int64)
    out["cpu"] = 1.0
    out["mem_gib"] = np.repeat(mem_per_proc, procs)
    report.note(f"per_processor: {len(frame):,} jobs split into {len(out):,} 1-vCPU tasks")
    return out
