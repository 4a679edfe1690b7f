"""Any CSV or Parquet job/task table as a trace, given a column mapping.

Options (``--format generic?job_id=JobID&submit_s=Submit&...``), all strings:

column mapping, ``canonical_name=source_column``:
    job_id, submit_s, cpu, mem_gib          required; job ids are integers, or any text
                                            (Slurm's 123_4): then numbered in order of
                                            first appearance, the text kept as
                                            source_job_id (in results too)
    runtime_s                               required unless ``end_column`` is given
    task_id                                 default: order of the row within its job (file order)
    user                                    default: "unknown"
    job_name                                default: the user (as the UMass loader), or
                                            "job-<id>" when no user column is mapped
    priority                                default: 0
    estimate_s, deadline_s, queue           optional; estimate_s/deadline_s are kept only if
                                            every kept row has one (else a note says why not)
    gpus                                    optional: GPUs per task, a number >= 0 (a GPU
                                            request needs a catalog with GPU types)
    anti_affinity                           optional: 0/1 or true/false (any case), no two
                                            flagged tasks of a job on one instance; an
                                            empty cell is false (counted in a note)
units and shapes:
    time_unit      s | ms | us | min | h    unit of numeric times and durations (default s)
    mem_unit       GiB | GB | MiB | MB | KiB | KB   (default GiB; GB/MB/KB are decimal)
    submit_format  number | iso             numbers in time_unit, or ISO-8601 datetimes
                                            (naive ones are UTC) (default number)
    end_column     a column of end times    runtime = end - start (same format as submit)
    start_column   a column of start times  the "start" for end_column (default: submit_s's
                                            column); sacct-like logs need Start, not Submit
    mapping        path to a JSON object with any of the keys above; options given
                   directly override the file's.

submit_s is rebased so the earliest row (before any drop) is 0; meta["origin_s"] keeps the
subtracted value in seconds (Unix seconds when the times are Unix or ISO datetimes).
Rows with runtime <= 0, and rows requesting neither cpu nor memory, are dropped and counted
(a value that is not a number, or a negative request, is a TraceError). Line numbers in
messages are 1-based physical lines of the CSV (header = line 1, one record per line);
Parquet rows are 0-based.

The option, reading and typed-column helpers are in traces/tables.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from stratus.base.errors import ConfigError, TraceError
from stratus.traces.schema import LoadReport, Trace
from stratus.traces.tables import (
    Table,
    check_options,
    drop_blank,
    duplicate_rows,
    first_negative,
    flags,
    job_ids,
    numbers,
    option_choice,
    option_text,
    optional_times,
    read_csv_table,
    read_parquet_table,
    seconds,
    strings,
    table_kind,
)

# --- the generic format -----------------------------------------------------------------

FORMAT = "generic"
COLUMN_KEYS = ("job_id", "task_id", "submit_s", "runtime_s", "cpu", "mem_gib", "user",
               "job_name", "priority", "estimate_s", "deadline_s", "queue", "gpus",
               "anti_affinity")
REQUIRED_KEYS = ("job_id", "submit_s", "cpu", "mem_gib")
SETTING_KEYS = ("time_unit", "mem_unit", "submit_format", "end_column", "start_column")
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0, "h": 3600.0}
MEM_UNITS = {"GiB": 1.0, "GB": 1e9 / 2**30, "MiB": 1.0 / 2**10, "MB": 1e6 / 2**30,
             "KiB": 1.0 / 2**20, "KB": 1e3 / 2**30}
SUBMIT_FORMATS = {"number": "number", "iso": "iso"}


def _merged_options(options: Mapping) -> dict[str, str]:
    """Options with a ``mapping=`` JSON file merged underneath the explicit ones."""
    check_options(FORMAT, options, (*COLUMN_KEYS, *SETTING_KEYS, "mapping"))
    opts = {k: str(v) for k, v in options.items() if k != "mapping"}
    path = option_text(FORMAT, options, "mapping", None)
    if path is None:
        return opts
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"format {FORMAT!r}: option 'mapping': cannot read {path} as "
                          f"JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"format {FORMAT!r}: option 'mapping': {path} must hold a JSON "
                          "object of key: column")
    for k, v in data.items():
        if k not in (*COLUMN_KEYS, *SETTING_KEYS):
            raise ConfigError(f"format {FORMAT!r}: mapping file {path}: unknown key {k!r}; "
                              f"known: {', '.join((*COLUMN_KEYS, *SETTING_KEYS))}")
        if not isinstance(v, str):
            raise ConfigError(f"format {FORMAT!r}: mapping file {path}: key {k!r} must be "
                              f"a string, got {v!r}")
    return {**data, **opts}


def _settings(options: Mapping) -> dict:
    opts = _merged_options(options)
    cols = {k: option_text(FORMAT, opts, k, None) for k in COLUMN_KEYS}
    cols = {k: v for k, v in cols.items() if v is not None}
    end = option_text(FORMAT, opts, "end_column", None)
    start = option_text(FORMAT, opts, "start_column", None)
    missing = [k for k in REQUIRED_KEYS if k not in cols]
    if "runtime_s" not in cols and end is None:
        missing.append("runtime_s (or end_column)")
    if missing:
        raise ConfigError(f"format {FORMAT!r}: map the column(s) {', '.join(missing)}, e.g. "
                          "generic?job_id=JobID&submit_s=Submit&...")
    if end is not None and "runtime_s" in cols:
        raise ConfigError(f"format {FORMAT!r}: give runtime_s or end_column, not both")
    if start is not None and end is None:
        raise ConfigError(f"format {FORMAT!r}: start_column needs end_column")
    time_name, time_unit = option_choice(FORMAT, opts, "time_unit", TIME_UNITS, "s")
    mem_name, mem_unit = option_choice(FORMAT, opts, "mem_unit", MEM_UNITS, "GiB")
    fmt_name, submit_format = option_choice(FORMAT, opts, "submit_format", SUBMIT_FORMATS,
                                            "number")
    return {"columns": cols, "end": end, "start": start, "time_unit": time_unit,
            "mem_unit": mem_unit, "submit_format": submit_format,
            "shown": {**cols, "time_unit": time_name, "mem_unit": mem_name,
                      "submit_format": fmt_name,
                      **({"end_column": end} if end else {}),
                      **({"start_column": start} if start else {}),
                      **({"mapping": str(options["mapping"])} if "mapping" in options else {})}}


def _check_columns(table: Table, cfg: dict) -> None:
    """ConfigError naming the option whose column the file lacks."""
    wanted = list(cfg["columns"].items())
    wanted += [(k, c) for k, c in (("end_column", cfg["end"]), ("start_column", cfg["start"])) if c]
    for key, col in wanted:
        if col not in table.frame.columns:
            have = ", ".join(map(str, table.frame.columns)) or "none"
            raise ConfigError(f"format {FORMAT!r}: option {key}={col!r}: {table.source} has "
                              f"no column {col!r} (columns: {have})")


def load(path: Path, **options) -> Trace:
    """Read ``path`` (CSV, CSV.gz or Parquet) with the column mapping in ``options``."""
    path = Path(path)
    cfg = _settings(options)
    cols = cfg["columns"]
    kind = table_kind(path, ("csv", "parquet"))
    text_cols = [cols[k] for k in ("user", "job_name", "queue", "anti_affinity") if k in cols]
    if cfg["submit_format"] == "iso":
        text_cols += [cols["submit_s"], *(c for c in (cfg["end"], cfg["start"]) if c)]
        text_cols += [cols["deadline_s"]] if "deadline_s" in cols else []
    table = read_csv_table(path, text_cols) if kind == "csv" else read_parquet_table(path)
    _check_columns(table, cfg)
    report = LoadReport(table.source, rows_read=len(table.frame))
    drop_blank(table, report)
    frame, origin = _canonical(table, cfg, report)
    if frame.empty:
        raise TraceError(f"{table.source}: no usable rows ({_dropped_text(report)})")
    meta = {"path": str(path), "format": FORMAT, "options": cfg["shown"], "origin_s": origin,
            "load_report": report.as_dict()}
    if "priority" not in cfg["columns"]:  # no priority column: 0 for every task, not known
        meta["unknown_columns"] = ["priority"]
    return Trace(frame, name=path.name, meta=meta)


def input_files(path: Path, **options) -> list[tuple[str, Path]]:
    """(name, file) for every file ``load`` reads: the table, and the ``mapping`` file if
    one is given (the trace cache's key, traces/cache.py)."""
    out = [(Path(path).name, Path(path))]
    mapping = options.get("mapping")
    if mapping:
        out.append(("mapping", Path(str(mapping))))
    return out


def _dropped_text(report: LoadReport) -> str:
    if not report.dropped:
        return "the table has no data rows"
    return "dropped: " + "; ".join(f"{n:,} {why}" for why, n in report.dropped.items())


def _canonical(table: Table, cfg: dict, report: LoadReport) -> tuple[pd.DataFrame, float]:
    """The canonical frame (before sorting) and the submit origin in seconds."""
    cols, unit, fmt = cfg["columns"], cfg["time_unit"], cfg["submit_format"]
    job, labels = job_ids(table, cols["job_id"])
    submit = seconds(table, cols["submit_s"], fmt, unit, what="submit_s")
    if cfg["end"]:
        end = seconds(table, cfg["end"], fmt, unit, what="end_column")
        start = (seconds(table, cfg["start"], fmt, unit, what="start_column") if cfg["start"]
                 else submit)
        runtime = end - start
    else:
        runtime = numbers(table, cols["runtime_s"], what="runtime_s") * unit
    cpu = numbers(table, cols["cpu"], what="cpu")
    mem = numbers(table, cols["mem_gib"], what="mem_gib") * cfg["mem_unit"]
    first_negative(table, cpu, cols["cpu"], "cpu")
    first_negative(table, mem, cols["mem_gib"], "mem_gib")
    origin = float(submit.min()) if len(submit) else 0.0
    frame = pd.DataFrame({"job_id": job.astype(np.int64), "submit_s": submit - origin,
                          "runtime_s": runtime, "cpu": cpu, "mem_gib": mem},
                         index=table.frame.index)
    if labels is not None:
        frame["source_job_id"] = labels
        text = labels[int(np.flatnonzero(pd.to_numeric(pd.Series(labels), errors="coerce")
                                         .isna().to_numpy())[0])]
        report.note(f"job ids are text ({text!r} is not a number): numbered 0 to "
                    f"{int(job.max()):,} in order of first appearance; results keep the "
                    "originals as source_job_id")
    _add_task_ids(table, cfg, frame)
    _add_text(table, cols, frame)
    if "gpus" in cols:
        gpus = numbers(table, cols["gpus"], what="gpus")
        first_negative(table, gpus, cols["gpus"], "gpus")
        frame["gpus"] = gpus
    frame["priority"] = (numbers(table, cols["priority"], integer=True, what="priority")
                         .astype(np.int64) if "priority" in cols else 0)
    if "anti_affinity" in cols:
        frame["anti_affinity"] = flags(table, cols["anti_affinity"], report, "anti_affinity")
    keep = runtime > 0
    report.drop("rows with runtime <= 0", int((~keep).sum()))
    empty = keep & (cpu + mem <= 0)
    report.drop("rows requesting no cpu and no memory", int(empty.sum()))
    keep &= ~empty
    frame = frame[keep]
    for key, what in (("estimate_s", "estimate"), ("deadline_s", "deadline")):
        if key in cols:
            vals = _optional(table, cols[key], key, fmt, unit, origin)[keep]
            optional_times(frame, key, vals, report, what)
    return frame, origin


def _optional(table: Table, column: str, key: str, fmt: str, unit: float,
              origin: float) -> np.ndarray:
    """estimate_s (a duration, > 0 or none) or deadline_s (a time like submit, or none)."""
    if key == "estimate_s":
        vals = numbers(table, column, empty_ok=True, what=key) * unit
        return np.where(vals > 0, vals, np.nan)
    if fmt == "number":
        return numbers(table, column, empty_ok=True, what=key) * unit - origin
    out = np.full(len(table.frame), np.nan)
    have = ~table.frame[column].isna().to_numpy()
    if have.any():
        sub = Table(table.frame[have], table.source, table.kind)
        out[have] = seconds(sub, column, fmt, unit, what=key) - origin
    return out


def _add_task_ids(table: Table, cfg: dict, frame: pd.DataFrame) -> None:
    cols = cfg["columns"]
    if "task_id" in cols:
        task = numbers(table, cols["task_id"], integer=True, what="task_id")
        first_negative(table, task, cols["task_id"], "task_id")
        frame["task_id"] = task.astype(np.int64)
    else:
        # Order within the job, in file order: what "the third row of job 7" means.
        frame["task_id"] = frame.groupby("job_id", sort=False).cumcount().astype(np.int64)
    pair = duplicate_rows(frame[["job_id", "task_id"]].reset_index(drop=True))
    if pair is not None:
        i, j = pair
        job = (repr(frame["source_job_id"].iloc[j]) if "source_job_id" in frame.columns
               else frame["job_id"].iloc[j])
        raise TraceError(f"{table.where(frame.index[j])}: duplicate (job_id, task_id) = "
                         f"({job}, {frame['task_id'].iloc[j]}), first on "
                         f"{table.place(frame.index[i])}")


def _add_text(table: Table, cols: dict, frame: pd.DataFrame) -> None:
    user = strings(table, cols["user"], what="user") if "user" in cols else "unknown"
    frame["user"] = user
    if "job_name" in cols:
        frame["job_name"] = strings(table, cols["job_name"], what="job_name")
    elif "user" in cols:
        frame["job_name"] = user  # like UMass: the user is the best proxy for the program
    else:
        ids = frame["source_job_id"] if "source_job_id" in frame.columns else frame["job_id"]
        frame["job_name"] = "job-" + ids.astype(str)
    if "queue" in cols:
        frame["queue"] = strings(table, cols["queue"], what="queue")

