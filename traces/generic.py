"""Any CSV or Parquet job/task table as a trace, given a column mapping.

Options (``--format generic?job_id=JobID&submit_s=Submit&...``), all strings:

column mapping, ``canonical_name=source_column``:
    job_id, submit_s, cpu, mem_gib          required
    runtime_s                               required unless ``end_column`` is given
    task_id                                 default: order of the row within its job (file order)
    user                                    default: "unknown"
    job_name                                default: the user (as the UMass loader), or
                                            "job-<id>" when no user column is mapped
    priority                                default: 0
    estimate_s, deadline_s, queue           optional; estimate_s/deadline_s are kept only if
                                            every kept row has one (else a note says why not)
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

The table helpers below (options, reading, typed columns) are shared with traces/umass.py
and traces/swf.py.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from stratus.errors import ConfigError, TraceError
from traces.schema import LoadReport, Trace

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
# Integers beyond 2**53 are not exact in float64, the type every column passes through.
MAX_EXACT_INT = 2.0**53

# --- options ----------------------------------------------------------------------------


def check_options(fmt: str, options: Mapping, known: Iterable[str]) -> None:
    """ConfigError naming the first option ``fmt`` does not take."""
    known = list(known)
    unknown = [k for k in options if k not in known]
    if unknown:
        raise ConfigError(f"format {fmt!r}: unknown option {unknown[0]!r}; known: "
                          f"{', '.join(known)}")


def option_text(fmt: str, options: Mapping, name: str, default: str | None) -> str | None:
    """The option as stripped text; an empty value is an error (it is never meant)."""
    if name not in options:
        return default
    text = str(options[name]).strip()
    if not text:
        raise ConfigError(f"format {fmt!r}: option {name!r} is empty")
    return text


def option_float(fmt: str, options: Mapping, name: str, default: float,
                 minimum: float = 0.0, inclusive: bool = True) -> float:
    """A finite number option >= (or >) ``minimum``."""
    text = option_text(fmt, options, name, None)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"format {fmt!r}: option {name!r} must be a number, "
                          f"got {options[name]!r}") from None
    ok = math.isfinite(value) and (value >= minimum if inclusive else value > minimum)
    if not ok:
        bound = ">=" if inclusive else ">"
        raise ConfigError(f"format {fmt!r}: option {name!r} must be a finite number "
                          f"{bound} {minimum:g}, got {options[name]!r}")
    return value


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def option_bool(fmt: str, options: Mapping, name: str, default: bool) -> bool:
    text = option_text(fmt, options, name, None)
    if text is None:
        return default
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ConfigError(f"format {fmt!r}: option {name!r} must be 1/0 (or true/false), "
                      f"got {options[name]!r}")


def option_choice(fmt: str, options: Mapping, name: str, choices: Mapping, default: str):
    """(canonical spelling, value) of a case-insensitive choice option."""
    text = option_text(fmt, options, name, default)
    by_lower = {k.lower(): k for k in choices}
    key = by_lower.get(text.lower())
    if key is None:
        raise ConfigError(f"format {fmt!r}: option {name!r} must be one of "
                          f"{', '.join(choices)}, got {options[name]!r}")
    return key, choices[key]


# --- reading tables ---------------------------------------------------------------------


def sniff(path: Path) -> bytes:
    """The first bytes of ``path``; TraceError if it cannot be opened."""
    try:
        with Path(path).open("rb") as fh:
            return fh.read(8)
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot open: {exc.strerror or exc}") from None


def table_kind(path: Path, allowed: Iterable[str] = ("csv", "parquet", "hdf5")) -> str:
    """csv, parquet or hdf5: by extension, else by magic bytes (a .gz is CSV).
    TraceError if the file cannot be opened."""
    head = sniff(path)
    name = Path(path).name.lower()
    if name.endswith((".parquet", ".pq")):
        kind = "parquet"
    elif name.endswith((".h5", ".hdf5", ".hdf")):
        kind = "hdf5"
    elif name.endswith((".csv", ".csv.gz")):
        kind = "csv"
    else:
        kind = ("parquet" if head.startswith(PARQUET_MAGIC)
                else "hdf5" if head.startswith(HDF5_MAGIC) else "csv")
    if kind not in allowed:
        raise TraceError(f"{path}: {kind} files are not read by this format "
                         f"(it reads {', '.join(allowed)})")
    return kind


class Table:
    """A frame read from a file, indexed by row position in the file, that can name a row.

    Row labels stay the file positions through filtering, so every message can point at the
    line (CSV, 1-based, header = line 1) or row (Parquet/HDF5, 0-based) at fault.
    """

    def __init__(self, frame: pd.DataFrame, source: str, kind: str) -> None:
        self.frame = frame
        self.source = source
        self.kind = kind

    def where(self, label: int) -> str:
        """'FILE:LINE' (CSV) or 'FILE: row N' for a row label."""
        if self.kind == "csv":
            return f"{self.source}:{int(label) + 2}"
        return f"{self.source}: {self.place(label)}"

    def place(self, label: int) -> str:
        """'line N' or 'row N' for a row label."""
        return f"line {int(label) + 2}" if self.kind == "csv" else f"row {int(label)}"

    def error(self, pos: int, column: str, problem: str, what: str = "") -> TraceError:
        """A TraceError for the row at position ``pos`` of the current frame; ``what`` is
        the canonical field the column feeds, when that differs from its name."""
        field = f"column {column!r}" + (f" ({what})" if what and what != column else "")
        return TraceError(f"{self.where(self.frame.index[pos])}: {field}: {problem}")

    def require(self, columns: Iterable[str], why: str = "required") -> None:
        missing = [c for c in columns if c not in self.frame.columns]
        if missing:
            have = ", ".join(map(str, self.frame.columns)) or "none"
            raise TraceError(f"{self.source}: missing {why} column(s) {', '.join(missing)} "
                             f"(columns: {have})")


def _open_binary(path: Path, compressed: bool):
    return gzip.open(path, "rb") if compressed else Path(path).open("rb")


def _first_bad_utf8(path: Path, compressed: bool) -> str:
    """'LINE: ...' for the first line that is not UTF-8 (pandas does not say where)."""
    lineno = 0
    try:
        with _open_binary(path, compressed) as fh:
            for lineno, raw in enumerate(fh, 1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    return (f"{lineno}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at "
                            f"column {exc.start + 1})")
    except (OSError, EOFError, zlib.error) as exc:
        return f"{lineno + 1}: cannot read: {exc}"
    return f"{lineno}: not valid UTF-8"


_LINE_RE = re.compile(r"line (\d+)")


def read_csv_table(path: Path, str_columns: Iterable[str] = ()) -> Table:
    """A CSV(.gz) as a Table. Only empty cells are missing ("NA" is text); blank lines are
    kept as all-missing rows so row positions stay line numbers (see ``drop_blank``)."""
    source = str(path)
    compressed = sniff(path).startswith(GZIP_MAGIC)
    try:
        frame = pd.read_csv(path, compression="gzip" if compressed else None,
                            dtype=dict.fromkeys(str_columns, str), keep_default_na=False,
                            na_values=[""], skip_blank_lines=False, encoding="utf-8")
    except UnicodeDecodeError:
        raise TraceError(f"{source}:{_first_bad_utf8(path, compressed)}") from None
    except pd.errors.EmptyDataError:
        raise TraceError(f"{source}:1: empty file, expected a header line") from None
    except pd.errors.ParserError as exc:
        m = _LINE_RE.search(str(exc))
        at = f":{m.group(1)}" if m else ""
        raise TraceError(f"{source}{at}: malformed CSV: {str(exc).splitlines()[-1]}") from None
    except Exception as exc:  # the parser's errors on damaged input are open-ended
        raise TraceError(f"{source}: cannot read as CSV ({type(exc).__name__}: {exc})") from None
    return Table(named_columns(frame, source, strip=True), source, "csv")


def read_parquet_table(path: Path) -> Table:
    import pyarrow.parquet as pq

    source = str(path)
    try:
        table = pq.read_table(path)
        # Parquet does not check that text is UTF-8; a damaged string page would otherwise
        # fail later, far from here, as an ArrowException inside pandas.
        table.validate(full=True)
        frame = table.to_pandas()
    except Exception as exc:  # pyarrow raises many unrelated types on damaged input
        raise TraceError(f"{source}: cannot read as Parquet "
                         f"({type(exc).__name__}: {exc})") from None
    return Table(named_columns(frame, source), source, "parquet")


def named_columns(frame: pd.DataFrame, source: str, strip: bool = False) -> pd.DataFrame:
    """Text column names, each once (a repeated name would make a column lookup ambiguous),
    and positions as the index."""
    names = [str(c).strip() if strip else str(c) for c in frame.columns]
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise TraceError(f"{source}: column name {n!r} appears twice")
        seen.add(n)
    frame.columns = names
    return frame.reset_index(drop=True)


def drop_blank(table: Table, report: LoadReport) -> None:
    """Remove rows with every cell empty (blank CSV lines), counted in the report."""
    blank = table.frame.isna().all(axis=1).to_numpy()
    if blank.any():
        report.drop("blank or all-empty rows", int(blank.sum()))
        table.frame = table.frame[~blank]


# --- typed columns ----------------------------------------------------------------------


def _field(column: str, what: str) -> str:
    return f"column {column!r}" + (f" ({what})" if what and what != column else "")


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def numbers(table: Table, column: str, *, integer: bool = False, empty_ok: bool = False,
            what: str = "") -> np.ndarray:
    """A column as float64; TraceError at the first empty (unless ``empty_ok``: NaN),
    non-numeric, non-finite or (with ``integer``) fractional or inexact value."""
    s = table.frame[column]
    if pd.api.types.is_datetime64_any_dtype(s) or pd.api.types.is_timedelta64_dtype(s):
        raise TraceError(f"{table.source}: {_field(column, what)} holds datetimes, not numbers")
    empty = s.isna().to_numpy()
    try:
        num = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TraceError(f"{table.source}: {_field(column, what)} is not numeric ({exc})") from None
    bad = np.isnan(num) & ~empty
    if bad.any():
        i = _first(bad)
        raise table.error(i, column, f"not a number: {_shown(s.iloc[i])}", what)
    if not empty_ok and empty.any():
        raise table.error(_first(empty), column, "empty", what)
    inf = np.isinf(num)
    if inf.any():
        i = _first(inf)
        raise table.error(i, column, f"not finite: {_shown(s.iloc[i])}", what)
    if integer:
        with np.errstate(invalid="ignore"):
            frac = ~empty & ((num != np.round(num)) | (np.abs(num) >= MAX_EXACT_INT))
        if frac.any():
            i = _first(frac)
            raise table.error(i, column, f"not an integer (or too large): {_shown(s.iloc[i])}",
                              what)
    return num


def strings(table: Table, column: str, *, empty_ok: bool = True, what: str = "") -> np.ndarray:
    """A column as stripped Python strings ("" if empty); integral floats print without
    '.0', because a float column of ids (floats from a missing cell) must not give '12.0'."""
    s = table.frame[column]
    empty = s.isna().to_numpy()
    if not empty_ok and empty.any():
        raise table.error(_first(empty), column, "empty", what)
    if pd.api.types.is_float_dtype(s):
        vals = s.to_numpy(dtype=np.float64, na_value=np.nan)
        fin = np.isfinite(vals)
        if np.all(vals[fin] == np.round(vals[fin])) and np.all(np.abs(vals[fin]) < MAX_EXACT_INT):
            return np.array([str(int(v)) if f else "" for v, f in zip(vals, fin)], dtype=object)
    vals = s.astype(object).to_numpy()
    return np.array(["" if e else str(v).strip() for v, e in zip(vals, empty)], dtype=object)


def seconds(table: Table, column: str, mode: str, unit_s: float = 1.0,
            what: str = "") -> np.ndarray:
    """Times as float seconds. ``mode``: "number" (numbers in ``unit_s`` seconds), "iso"
    (ISO-8601 datetimes; naive = UTC) or "auto" (each value a number or a datetime)."""
    s = table.frame[column]
    if pd.api.types.is_datetime64_any_dtype(s):
        if mode == "number":
            raise TraceError(f"{table.source}: {_field(column, what)} holds datetimes; "
                             "use submit_format=iso")
        out = _datetime_seconds(s)
    elif mode == "number":
        return numbers(table, column, what=what) * unit_s
    else:
        out = _text_seconds(s, mode, unit_s)
    empty = s.isna().to_numpy()
    if empty.any():
        raise table.error(_first(empty), column, "empty", what)
    bad = np.isnan(out)
    if bad.any():
        i = _first(bad)
        kind = "a number or an ISO datetime" if mode == "auto" else "an ISO datetime"
        raise table.error(i, column, f"not {kind}: {_shown(s.iloc[i])}", what)
    return out


def _text_seconds(s: pd.Series, mode: str, unit_s: float) -> np.ndarray:
    """Seconds of number-or-datetime text, NaN where a value is neither."""
    out = np.full(len(s), np.nan)
    if mode == "auto":
        num = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        out = np.where(np.isfinite(num), num * unit_s, np.nan)
    rest = np.isnan(out) & ~s.isna().to_numpy()
    if rest.any():
        text = s[rest].astype(str)
        try:
            dt = pd.to_datetime(text, utc=True, format="ISO8601", errors="coerce")
        except (TypeError, ValueError, OverflowError):
            return out  # unparsable as a whole: every such value stays NaN and is reported
        out[rest] = _datetime_seconds(dt)
    return out


def _datetime_seconds(dt: pd.Series) -> np.ndarray:
    """Unix seconds of a datetime Series (naive = UTC); NaN = NaT.

    In numpy, in the Series' own unit: pandas arithmetic would convert a far date (say the
    year 4096, which "4096" parses as) to nanoseconds and overflow."""
    if dt.dt.tz is not None:
        dt = dt.dt.tz_convert("UTC").dt.tz_localize(None)
    vals = dt.to_numpy()
    out = (vals - np.datetime64(0, "s")) / np.timedelta64(1, "s")
    return np.where(np.isnat(vals), np.nan, out).astype(np.float64)


def first_negative(table: Table, values: np.ndarray, column: str, what: str = "") -> None:
    """TraceError at the first negative value: a request cannot be negative."""
    neg = values < 0
    if neg.any():
        i = _first(neg)
        raise table.error(i, column, f"must be >= 0, got {values[i]:g}", what)


def optional_times(frame: pd.DataFrame, column: str, values: np.ndarray, report: LoadReport,
                   what: str) -> None:
    """Add ``column`` (e.g. estimate_s) if every kept row has a value (NaN = none): the
    schema has no missing values, and inventing one would mislead an estimator."""
    have = ~np.isnan(values)
    if have.all() and len(values):
        frame[column] = values
    elif have.any():
        report.note(f"{column} omitted: {int((~have).sum()):,} of {len(values):,} kept rows "
                    f"have no {what}")


def duplicate_rows(keys: pd.DataFrame) -> tuple[int, int] | None:
    """Positions (first, second) of the first repeated key row, or None."""
    dup = keys.duplicated(keep="first").to_numpy()
    if not dup.any():
        return None
    j = int(np.flatnonzero(dup)[0])
    same = np.ones(len(keys), dtype=bool)
    for col in keys.columns:
        same &= keys[col].to_numpy() == keys[col].iloc[j]
    return int(np.flatnonzero(same)[0]), j


# --- the generic format -----------------------------------------------------------------

FORMAT = "generic"
COLUMN_KEYS = ("job_id", "task_id", "submit_s", "runtime_s", "cpu", "mem_gib", "user",
               "job_name", "priority", "estimate_s", "deadline_s", "queue")
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
    text_cols = [cols[k] for k in ("user", "job_name", "queue") if k in cols]
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
    return Trace(frame, name=path.name, meta=meta)


def _dropped_text(report: LoadReport) -> str:
    if not report.dropped:
        return "the table has no data rows"
    return "dropped: " + "; ".join(f"{n:,} {why}" for why, n in report.dropped.items())


def _canonical(table: Table, cfg: dict, report: LoadReport) -> tuple[pd.DataFrame, float]:
    """The canonical frame (before sorting) and the submit origin in seconds."""
    cols, unit, fmt = cfg["columns"], cfg["time_unit"], cfg["submit_format"]
    job = numbers(table, cols["job_id"], integer=True, what="job_id")
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
    _add_task_ids(table, cfg, frame)
    _add_text(table, cols, frame)
    frame["priority"] = (numbers(table, cols["priority"], integer=True, what="priority")
                         .astype(np.int64) if "priority" in cols else 0)
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
        raise TraceError(f"{table.where(frame.index[j])}: duplicate (job_id, task_id) = "
                         f"({frame['job_id'].iloc[j]}, {frame['task_id'].iloc[j]}), first on "
                         f"{table.place(frame.index[i])}")


def _add_text(table: Table, cols: dict, frame: pd.DataFrame) -> None:
    user = strings(table, cols["user"], what="user") if "user" in cols else "unknown"
    frame["user"] = user
    if "job_name" in cols:
        frame["job_name"] = strings(table, cols["job_name"], what="job_name")
    elif "user" in cols:
        frame["job_name"] = user  # like UMass: the user is the best proxy for the program
    else:
        frame["job_name"] = "job-" + frame["job_id"].astype(str)
    if "queue" in cols:
        frame["queue"] = strings(table, cols["queue"], what="queue")

