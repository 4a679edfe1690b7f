"""The canonical trace: one row per task.

| column     | type    | unit / meaning                                             |
|------------|---------|------------------------------------------------------------|
| job_id     | int64   | job identifier                                             |
| task_id    | int64   | index of the task within its job; (job_id, task_id) unique |
| submit_s   | float64 | submit time, seconds from the trace origin                 |
| runtime_s  | float64 | true runtime in seconds, > 0                               |
| cpu        | float64 | requested vCPU, >= 0                                       |
| mem_gib    | float64 | requested memory in GiB, >= 0 (cpu + mem > 0)              |
| user       | string  | submitting user                                            |
| job_name   | string  | job name (logical program), for runtime estimation         |
| priority   | int64   | scheduling priority (larger = more important)              |
| deadline_s | float64 | optional: absolute deadline                                |
| estimate_s | float64 | optional: the user's runtime estimate (e.g. SWF requested) |
| queue      | string  | optional: the queue or partition the job was submitted to  |
| gpus       | float64 | optional: requested GPUs, >= 0 (0.47: a share of one GPU)  |
| anti_affinity | bool | optional: no two flagged tasks of one job on one instance    |
|            |         | (Google 2011 different_machine; read as 0/1 or true/false) |
| source_job_id | string | optional: the job's id as the source wrote it, when that  |
|            |         | is not a number (Slurm's 123_4); one per job_id, and the   |
|            |         | results (jobs tables) carry it beside job_id               |

Rows are kept sorted by (submit_s, job_id, task_id); row position is the task's global id.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from stratus.base.errors import TraceError, shown
from stratus.base.reports import LoadReport  # noqa: F401 (re-exported)

REQUIRED: dict[str, str] = {
    "job_id": "int64",
    "task_id": "int64",
    "submit_s": "float64",
    "runtime_s": "float64",
    "cpu": "float64",
    "mem_gib": "float64",
    "user": "string",
    "job_name": "string",
    "priority": "int64",
}
OPTIONAL: dict[str, str] = {"deadline_s": "float64", "estimate_s": "float64", "queue": "string",
                            "gpus": "float64", "anti_affinity": "bool",
                            "source_job_id": "string"}
COLUMNS = {**REQUIRED, **OPTIONAL}
SORT_KEY = ["submit_s", "job_id", "task_id"]
MAX_REPORTED_ROWS = 5
FLAG_TRUE = frozenset({"1", "true"})
FLAG_FALSE = frozenset({"0", "false"})


def flag_values(values) -> tuple[np.ndarray, np.ndarray]:
    """(flags, bad): booleans of 0/1, True/False or the text 0/1/true/false (any case), and
    where a value is none of those (empty included)."""
    s = pd.Series(values)
    if pd.api.types.is_bool_dtype(s) and not s.isna().any():
        return s.to_numpy(dtype=bool), np.zeros(len(s), dtype=bool)
    out = np.zeros(len(s), dtype=bool)
    bad = np.zeros(len(s), dtype=bool)
    for i, v in enumerate(s.tolist()):
        if isinstance(v, (bool, np.bool_)):
            out[i] = bool(v)
        elif isinstance(v, (int, float, np.integer, np.floating)) and v in (0, 1):
            out[i] = v == 1
        elif isinstance(v, str) and v.strip().lower() in FLAG_TRUE | FLAG_FALSE:
            out[i] = v.strip().lower() in FLAG_TRUE
        else:
            bad[i] = True
    return out, bad


def bad_rows(source: str, frame: pd.DataFrame, mask: np.ndarray, what: str) -> TraceError:
    idx = np.flatnonzero(mask)
    first = idx[:MAX_REPORTED_ROWS]
    places = []
    for i in first:
        row = frame.iloc[int(i)]
        where = f"row {int(i)}"
        if "job_id" in frame.columns and "task_id" in frame.columns:
            job = (shown(row["source_job_id"]) if "source_job_id" in frame.columns
                   else shown(row["job_id"]))
            where += f" (job {job}, task {shown(row['task_id'])})"
        places.append(where)
    more = f" and {idx.size - first.size} more" if idx.size > first.size else ""
    return TraceError(f"{source}: {what} at {', '.join(places)}{more}")


def validate_frame(frame: pd.DataFrame, source: str = "trace") -> pd.DataFrame:
    """Check and coerce a frame to the canonical schema; return it sorted and re-indexed.

    Raises TraceError naming the source, the column and the first offending rows.
    """
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise TraceError(f"{source}: missing required column(s) {', '.join(missing)}")
    # the columns are checked as arrays and the frame is built once at the end: a frame
    # grown column by column cost more than the checks on a small trace (a test's, a
    # window's); same columns, dtypes, values and errors
    cols: dict[str, object] = {}
    for col, dtype in COLUMNS.items():
        if col not in frame.columns:
            continue
        s = frame[col]
        na = s.isna().to_numpy()
        if na.any():
            raise bad_rows(source, frame, na, f"column {col!r} is empty")
        if dtype == "string":
            cols[col] = s.astype(str).array
            continue
        if dtype == "bool":
            flags, bad = flag_values(s)
            if bad.any():
                raise bad_rows(source, frame, bad, f"column {col!r} must be 0/1 or true/false")
            cols[col] = flags
            continue
        if isinstance(s.dtype, np.dtype) and s.dtype.kind in "iuf":
            arr = s.to_numpy(dtype=np.float64)  # numbers already, none missing: to_numeric's
        else:
            num = pd.to_numeric(s, errors="coerce")
            if num.isna().any():
                raise bad_rows(source, frame, num.isna().to_numpy(), f"column {col!r} is not a number")
            arr = num.to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(arr)):
            raise bad_rows(source, frame, ~np.isfinite(arr), f"column {col!r} is not finite")
        if dtype == "int64":
            if np.any(arr != np.round(arr)):
                raise bad_rows(source, frame, arr != np.round(arr), f"column {col!r} must be an integer")
            cols[col] = arr.astype(np.int64)
        else:
            cols[col] = arr
    checks = [
        (cols["runtime_s"] <= 0, "runtime_s must be > 0"),
        (cols["cpu"] < 0, "cpu must be >= 0"),
        (cols["mem_gib"] < 0, "mem_gib must be >= 0"),
        (cols["gpus"] < 0 if "gpus" in cols else np.zeros(len(frame), bool),
         "gpus must be >= 0"),
        ((cols["cpu"] + cols["mem_gib"]) <= 0, "a task must request some cpu or memory"),
        (cols["task_id"] < 0, "task_id must be >= 0"),
    ]
    for mask, what in checks:
        if mask.any():
            raise bad_rows(source, frame, mask, what)
    out = pd.DataFrame(cols, index=frame.index)  # arrays: by position, as frame's rows
    if "source_job_id" in out.columns:
        _check_source_ids(source, frame, out)
    dup = out.duplicated(["job_id", "task_id"], keep="first").to_numpy()
    if dup.any():
        raise bad_rows(source, frame, dup, "duplicate (job_id, task_id)")
    out = out.sort_values(SORT_KEY, kind="stable").reset_index(drop=True)
    return out


def _check_source_ids(source: str, frame: pd.DataFrame, out: pd.DataFrame) -> None:
    """One source id per job_id and one job_id per source id: a result's job must name
    one job of the source."""
    pairs = out[["job_id", "source_job_id"]].drop_duplicates()
    for col in ("job_id", "source_job_id"):
        twice = pairs[col].duplicated(keep=False)
        if twice.any():
            value = pairs[col][twice].iloc[0]
            rows = (out[col] == value).to_numpy()
            raise bad_rows(source, frame, rows, f"{col} {shown(value)} has more than one "
                            f"{'source_job_id' if col == 'job_id' else 'job_id'}")


def source_ids(frame: pd.DataFrame, job_ids) -> np.ndarray | None:
    """The source's id of each of ``job_ids`` (the ``source_job_id`` column), None when
    the trace's ids are its own."""
    if "source_job_id" not in frame.columns:
        return None
    first = frame.drop_duplicates("job_id").set_index("job_id")["source_job_id"]
    return first.reindex(np.asarray(job_ids)).astype(object).to_numpy()


#: ``Trace.meta`` key: the canonical columns the source format does not carry (filled with
#: a default, e.g. SWF's priority 0), which a description must call unknown
UNKNOWN = "unknown_columns"


class Trace:
    """A validated, sorted canonical trace plus where it came from."""

    #: how to cut the history before this window (stratus.app.session.Origin), set on a
    #: window ``stratus.load_trace`` returns; a trace made from it (a window, a fit) has none
    origin = None

    def __init__(self, frame: pd.DataFrame, name: str = "trace", meta: Mapping | None = None,
                 validated: bool = False) -> None:
        self.frame = frame if validated else validate_frame(frame, name)
        self.name = name
        self.meta = dict(meta or {})

    # --- size -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.frame)

    @property
    def n_tasks(self) -> int:
        return len(self.frame)

    @property
    def n_jobs(self) -> int:
        return int(self.frame["job_id"].nunique())

    def column(self, name: str) -> np.ndarray:
        return self.frame[name].to_numpy()

    def has(self, name: str) -> bool:
        return name in self.frame.columns

    def unknown(self, name: str) -> bool:
        """Whether column ``name`` holds a default the source did not give (``UNKNOWN``)."""
        return name in self.meta.get(UNKNOWN, ())

    @property
    def span_s(self) -> float:
        """Seconds from the first submit to the last task's end if run at once."""
        if not len(self):
            return 0.0
        sub = self.column("submit_s")
        return float((sub + self.column("runtime_s")).max() - sub.min())

    # --- slicing ----------------------------------------------------------------------
    def window(self, start_s: float, end_s: float, inside: bool = True) -> Trace:
        """Jobs submitted in [start_s, end_s); with ``inside`` only jobs whose every task
        also ends by ``end_s`` (Stratus §4.2: no partial jobs)."""
        f = self.frame
        job_first = f.groupby("job_id")["submit_s"].transform("min")
        keep = (job_first >= start_s) & (job_first < end_s)
        if inside:
            job_end = (f["submit_s"] + f["runtime_s"]).groupby(f["job_id"]).transform("max")
            keep &= job_end <= end_s
        sub = f[keep.to_numpy()].reset_index(drop=True)
        meta = dict(self.meta, window=[start_s, end_s], window_inside=inside)
        return Trace(sub, name=self.name, meta=meta, validated=True)

    # --- storage ----------------------------------------------------------------------
    def to_parquet(self, path: str | Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(self.frame, preserve_index=False)
        md = dict(table.schema.metadata or {})
        md[b"stratus.trace.name"] = self.name.encode()
        if self.meta.get(UNKNOWN):  # a converted SWF log's priority stays unknown
            md[b"stratus.trace.unknown_columns"] = ",".join(self.meta[UNKNOWN]).encode()
        pq.write_table(table.replace_schema_metadata(md), path)

    @classmethod
    def from_parquet(cls, path: str | Path) -> Trace:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
            # ignore pandas' embedded metadata: the schema above defines the columns, and a
            # damaged metadata blob must not decide whether the file can be read
            frame = table.to_pandas(ignore_metadata=True)
        except (OSError, ValueError, KeyError, TypeError, IndexError, pa.ArrowException) as exc:
            raise TraceError(f"{path}: cannot read as Parquet: {exc}") from None
        raw = (table.schema.metadata or {}).get(b"stratus.trace.name")
        name = raw.decode("utf-8", "replace") if raw else Path(path).name
        meta: dict = {"path": str(path)}
        unknown = (table.schema.metadata or {}).get(b"stratus.trace.unknown_columns")
        if unknown:
            meta[UNKNOWN] = unknown.decode("utf-8", "replace").split(",")
        return cls(frame, name=name, meta=meta)

    def __repr__(self) -> str:
        return f"Trace({self.name!r}, tasks={self.n_tasks}, jobs={self.n_jobs})"


def gpu_requests(frame: pd.DataFrame) -> np.ndarray:
    """Requested GPUs per row: the optional ``gpus`` column, else zeros."""
    if "gpus" in frame.columns:
        return frame["gpus"].to_numpy(dtype=np.float64)
    return np.zeros(len(frame))


def has_gpus(trace: Trace) -> bool:
    """Whether any task requests a GPU."""
    return bool(trace.has("gpus") and (trace.column("gpus") > 0).any())


def oversized_mask(trace: Trace, catalog) -> np.ndarray:
    """Rows whose request fits no instance type of ``catalog`` (in integer units). A GPU
    request fits no type of a catalog without GPUs (docs/decisions.md, "A GPU dimension")."""
    from stratus.base.resources import request_units

    f = trace.frame
    req = request_units(f["cpu"], f["mem_gib"], gpu_requests(f) if catalog.has_gpus else None)
    fits_any = np.zeros(len(trace), dtype=bool)
    for t in catalog:
        fits_any |= (req <= np.asarray(t.capacity)).all(axis=1)
    if not catalog.has_gpus and has_gpus(trace):
        fits_any &= ~(trace.column("gpus") > 0)
    return ~fits_any


def fit_to_catalog(trace: Trace, catalog, drop: bool) -> Trace:
    """Refuse (TraceError naming the first rows) or, with ``drop``, remove the jobs that have
    a task larger than every type in ``catalog``, recording the count in the load report."""
    bad = oversized_mask(trace, catalog)
    if not bad.any():
        return trace
    if not drop:
        if not catalog.has_gpus and has_gpus(trace) and (bad & (trace.column("gpus") > 0)).any():
            raise bad_rows(trace.name, trace.frame, bad & (trace.column("gpus") > 0),
                            f"task requests GPUs but catalog {catalog.name} has no GPU type; "
                            f"pass --drop-oversized to drop such jobs")
        raise bad_rows(trace.name, trace.frame, bad,
                        f"task larger than every {catalog.name} instance type "
                        f"(largest {catalog.types[-1].name}); pass --drop-oversized to drop such jobs")
    f = trace.frame
    bad_jobs = np.unique(f["job_id"].to_numpy()[bad])
    keep = ~f["job_id"].isin(bad_jobs).to_numpy()
    report = LoadReport.from_dict(trace.meta.get("load_report") or {}, trace.name, len(f))
    gpu_jobs = (np.unique(f["job_id"].to_numpy()[bad & (trace.column("gpus") > 0)])
                if not catalog.has_gpus and has_gpus(trace) else bad_jobs[:0])
    report.drop(f"jobs requesting GPUs (catalog {catalog.name} has none)", int(gpu_jobs.size))
    report.drop(f"jobs with a task larger than every {catalog.name} type",
                int(bad_jobs.size - gpu_jobs.size))
    meta = dict(trace.meta, load_report=report.as_dict())
    return Trace(f[keep].reset_index(drop=True), name=trace.name, meta=meta, validated=True)
