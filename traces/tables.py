"""Shared pieces of the table-shaped trace loaders (generic, UMass, SWF, Google 2011):
format options given as strings, reading CSV/Parquet safely, and typed columns whose
errors name the file, line or row, and field."""

from __future__ import annotations

import gzip
import math
import re
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from stratus.base.errors import ConfigError, TraceError, shown
from stratus.traces.schema import LoadReport, flag_values

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


def option_int(fmt: str, options: Mapping, name: str, default: int | None,
               minimum: int = 0) -> int | None:
    """A whole-number option >= ``minimum``."""
    value = option_float(fmt, options, name, default, minimum=minimum)
    if value is None or value == default:
        return value
    if not float(value).is_integer():
        raise ConfigError(f"format {fmt!r}: option {name!r} must be a whole number, "
                          f"got {options[name]!r}")
    return int(value)


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
    return shown(value, 40)


def numbers(table: Table, column: str, *, integer: bool = False, empty_ok: bool = False,
            what: str = "") -> np.ndarray:
    """A column as float64; TraceError at the first empty (unless ``empty_ok``: NaN),
    non-numeric, non-finite or (with ``integer``) fractional or inexact value."""
    s = table.frame[column]
    if pd.api.types.is_datetime64_any_dtype(s) or pd.api.types.is_timedelta64_dtype(s):
        raise TraceError(f"{table.source}: {_field(column, what)} holds datetimes, not numbers")
    if pd.api.types.is_bool_dtype(s) or (s.dtype == object and s.map(type).eq(bool).any()):
        # pandas reads true/false as booleans and to_numeric would take them as 1 and 0
        i = _first(s.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy())
        raise table.error(i, column, f"a boolean, not a number: {_shown(s.iloc[i])}", what)
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


def job_ids(table: Table, column: str, what: str = "job_id") -> tuple[np.ndarray, np.ndarray | None]:
    """(ids as float64 integers, None), or, when some value is not a number at all (Slurm
    array ids such as ``123_4``, step ids such as ``123.batch``), (every id numbered 0, 1,
    ... in order of first appearance, the original texts). A column of numbers keeps its
    values, and a fractional or inexact one is still an error (more likely a wrong column
    than an id); an empty id is an error either way."""
    s = table.frame[column]
    empty = s.isna().to_numpy()
    text_like = not (pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s))
    if text_like and not empty.all():
        num = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        has_bool = s.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy().any()
        if (np.isnan(num) & ~empty).any() and not has_bool:
            labels = strings(table, column, what=what)
            blank = labels == ""
            if blank.any():
                raise table.error(_first(blank), column, "empty", what)
            codes, _ = pd.factorize(labels, sort=False)
            return codes.astype(np.float64), labels
    return numbers(table, column, integer=True, what=what), None


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


def flags(table: Table, column: str, report: LoadReport, what: str = "") -> np.ndarray:
    """A 0/1 (or true/false) column as booleans; an empty cell is False, counted in a note
    (a flag absent is no constraint); any other value is a TraceError at its line."""
    s = table.frame[column]
    empty = s.isna().to_numpy()
    out, bad = flag_values(s.where(~empty, 0))
    if bad.any():
        i = _first(bad)
        raise table.error(i, column, f"must be 0/1 or true/false, got {_shown(s.iloc[i])}",
                          what)
    if empty.any():
        report.note(f"{int(empty.sum()):,} rows have no {what or column} value; taken as false")
    return out


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
