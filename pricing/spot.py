"""Spot price history: loaders, the compact bundled format, and spot price books.

Stratus §4.1 replays Amazon's spot price history for each allowed instance type. This module
reads that history as the AWS CLI prints it and turns it into one ``PriceSeries`` per
instance type, in seconds from an origin:

* JSON from ``aws ec2 describe-spot-price-history``: one ``{"SpotPriceHistory": [...]}``
  document, several concatenated, a JSON list of such pages, or a bare list of records;
* CSV or TSV with a header naming the columns Timestamp, InstanceType, SpotPrice and
  optionally ProductDescription, AvailabilityZone (any order, case and ``_`` ignored);
* ``--output text``: ``SPOTPRICEHISTORY<TAB>zone<TAB>type<TAB>product<TAB>price<TAB>time``;
* the compact Parquet format of the bundled synthetic trace (see ``write_compact``).

Any of them may be gzip-compressed. A file that cannot be read as given raises
``TraceError`` naming the file, the 1-based line (text formats) or record (JSON), and the
field; a bad option (unknown zone, product, missing types) raises ``ConfigError``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from stratus.base.errors import ConfigError, TraceError, shown
from stratus.base.inputs import check_input
from stratus.base.reports import LoadReport
from stratus.pricing.catalog import Catalog
from stratus.pricing.prices import SPOT, PriceBook, PriceSeries

DEFAULT_PRODUCT = "Linux/UNIX"
BUNDLED = Path(__file__).parent / "data" / "spot_m4_us-west-2a_2017-06-05_synthetic.parquet"
UNITS_PER_USD = 10_000  # compact-format price unit $0.0001: AWS publishes prices to $0.0001
META_KEY = b"stratus.spot"
COMPACT_VERSION = 1

# Internal field keys and the names a file uses for them (AWS's spelling).
FIELDS = {"ts": "Timestamp", "type": "InstanceType", "product": "ProductDescription",
          "price": "SpotPrice", "zone": "AvailabilityZone"}
REQUIRED = ("ts", "type", "price")
OPTIONAL = ("product", "zone")
TEXT_ORDER = ("zone", "type", "product", "price", "ts")  # --output text: keys in alphabetical order
_BY_NAME = {v.lower(): k for k, v in FIELDS.items()}
_BAD = object()  # a JSON value of the wrong kind (object, list, bool)
_ISO = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
                  r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?)?"
                  r"(Z|[+-][0-9]{2}:?[0-9]{2})?")
FORMATS = ("json", "csv", "tsv", "text", "parquet")


@dataclass
class SpotHistory:
    """Spot prices of one zone and product: ``series[type]`` in $/h over seconds from ``origin``."""

    series: dict[str, PriceSeries]
    origin: datetime
    zone: str | None
    product: str | None
    report: LoadReport
    meta: dict = field(default_factory=dict)

    @property
    def types(self) -> list[str]:
        return sorted(self.series)

    @property
    def end_s(self) -> float:
        """The last change time of any type (prices hold after it)."""
        return max(float(s.times[-1]) for s in self.series.values())

    def __repr__(self) -> str:
        n = sum(s.times.size for s in self.series.values())
        return (f"SpotHistory(zone={self.zone!r}, product={self.product!r}, "
                f"types={len(self.series)}, "
                f"changes={n}, origin={self.origin.isoformat()})")


# --- raw records ----------------------------------------------------------------------


@dataclass
class _Raw:
    """Records as read: per field a list of str (None = missing, _BAD = wrong JSON kind)."""

    src: str
    unit: str  # "line" or "record": how ``where`` numbers them, 1-based
    cols: dict[str, list] = field(default_factory=lambda: {k: [] for k in FIELDS})
    where: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, where: int, values: Mapping[str, object]) -> None:
        self.where.append(where)
        for k in FIELDS:
            self.cols[k].append(_cell(values.get(k)))

    def at(self, i: int) -> str:
        return f"{self.src}: {self.unit} {self.where[i]}"


def _cell(v: object) -> object:
    if v is None:
        return None
    if isinstance(v, str):
        v = v.strip()
        return v or None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return repr(v)  # AWS writes prices as strings; accept numbers too
    return _BAD


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "").replace(" ", "")


def _key(name: object) -> str | None:
    return _BY_NAME.get(_norm(name)) if isinstance(name, str) else None


# --- reading bytes and text -----------------------------------------------------------


def _read_bytes(path: Path) -> bytes:
    check_input(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(f"{path}: truncated or corrupt gzip data ({exc})") from None
    if path.suffix == ".gz":
        raise TraceError(f"{path}: named .gz but not gzip data")
    return data


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TraceError(f"{path}: line {line}: not UTF-8 text "
                         f"(byte 0x{data[exc.start]:02x})") from None


def _detect(path: Path, text: str) -> str:
    """The format by extension where it says, else by content."""
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    ext = suffixes[-1] if suffixes else ""
    if ext == ".json":
        return "json"
    head = text.lstrip()[:1]
    if ext not in (".csv", ".tsv") and head in ("{", "["):
        return "json"
    first = next((ln for ln in text.split("\n") if ln.strip()), "")
    if ext != ".csv" and first.startswith(("SPOTPRICEHISTORY", "NEXTTOKEN")):
        return "text"
    if ext in (".csv", ".tsv"):
        return ext[1:]
    return "tsv" if first.count("\t") > first.count(",") else "csv"


# --- the three AWS shapes -------------------------------------------------------------


def _json_documents(src: str, text: str) -> list[object]:
    dec = json.JSONDecoder()
    docs, i, n = [], 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            return docs
        try:
            obj, i = dec.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{src}: line {exc.lineno}, column {exc.colno}: "
                             f"invalid JSON ({exc.msg})") from None
        except (ValueError, RecursionError) as exc:  # huge integers, absurd nesting
            line = text.count("\n", 0, i) + 1
            raise TraceError(f"{src}: line {line}: invalid JSON ({type(exc).__name__})") from None
        docs.append(obj)


def _parse_json(src: str, text: str) -> _Raw:
    raw = _Raw(src, "record")
    records: list[object] = []
    docs = _json_documents(src, text)
    for d, doc in enumerate(docs, 1):
        for item in doc if isinstance(doc, list) else [doc]:
            if isinstance(item, dict) and "SpotPriceHistory" in item:
                page = item["SpotPriceHistory"]
                if not isinstance(page, list):
                    raise TraceError(f"{src}: document {d}: 'SpotPriceHistory' is not a list")
                records.extend(page)
            elif isinstance(doc, list):
                records.append(item)  # a bare list of records (``--query SpotPriceHistory``)
            else:
                raise TraceError(f"{src}: document {d}: expected an object with a "
                                 "'SpotPriceHistory' list, or a list of records")
    for r, rec in enumerate(records, 1):
        if not isinstance(rec, dict):
            raise TraceError(f"{src}: record {r}: expected an object, got {type(rec).__name__}")
        raw.add(r, {k: v for name, v in rec.items() if (k := _key(name))})
    return raw


def _parse_delimited(src: str, text: str, delim: str) -> _Raw:
    raw = _Raw(src, "line")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim, strict=True)
    try:
        header = next((row for row in reader if any(c.strip() for c in row)), None)
        if header is None:
            raise TraceError(f"{src}: empty file: no header line")
        keys = [_key(h) for h in header]
        _check_header(src, reader.line_num, header, keys)
        for row in reader:
            if not any(c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise TraceError(f"{src}: line {reader.line_num}: expected {len(header)} "
                                 f"fields, got {len(row)}")
            raw.add(reader.line_num, {k: c for k, c in zip(keys, row) if k})
    except csv.Error as exc:
        raise TraceError(f"{src}: line {reader.line_num}: {exc}") from None
    return raw


def _check_header(src: str, line: int, header: list[str], keys: list[str | None]) -> None:
    known = [k for k in keys if k]
    dup = sorted({FIELDS[k] for k in known if known.count(k) > 1})
    if dup:
        raise TraceError(f"{src}: line {line}: duplicate column(s) {', '.join(dup)}")
    missing = [FIELDS[k] for k in REQUIRED if k not in known]
    if missing:
        raise TraceError(f"{src}: line {line}: header lacks column(s) {', '.join(missing)} "
                         f"(has: {', '.join(h.strip() for h in header)[:200]})")


def _parse_text(src: str, text: str) -> _Raw:
    raw = _Raw(src, "line")
    tokens = 0
    for n, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        parts = line.split("\t")
        if parts[0] == "NEXTTOKEN":
            tokens += 1  # pagination marker between pages
            continue
        if parts[0] != "SPOTPRICEHISTORY" or len(parts) != 6:
            raise TraceError(f"{src}: line {n}: expected 'SPOTPRICEHISTORY' and 5 tab-separated "
                             f"fields ({', '.join(FIELDS[k] for k in TEXT_ORDER)})")
        raw.add(n, dict(zip(TEXT_ORDER, parts[1:])))
    if tokens:
        raw.notes.append(f"skipped {tokens} NEXTTOKEN line(s)")
    return raw


# --- from raw records to a history ----------------------------------------------------


def _show(v: object) -> str:
    return shown(v, 40)


def _check_present(raw: _Raw) -> set[str]:
    """Fail on the first missing or ill-typed value; return the optional fields present."""
    present = set(REQUIRED)
    for k in OPTIONAL:
        if any(v is not None for v in raw.cols[k]):
            present.add(k)
    for k in FIELDS:
        col = raw.cols[k]
        for i, v in enumerate(col):
            if v is _BAD:
                raise TraceError(f"{raw.at(i)}: field {FIELDS[k]!r} must be a string or number")
            if v is None and k in present:
                raise TraceError(f"{raw.at(i)}: field {FIELDS[k]!r} is missing or empty")
    return present


def _timestamps(raw: _Raw, report: LoadReport) -> np.ndarray:
    """Nanoseconds since the epoch (UTC) per record; a time without an offset is UTC."""
    s = raw.cols["ts"]
    naive = 0
    for i, v in enumerate(s):
        m = _ISO.fullmatch(v)
        if m is None:
            raise TraceError(f"{raw.at(i)}: field 'Timestamp': not an ISO 8601 time: {_show(v)}")
        naive += m.group(1) is None
    ts = pd.to_datetime(pd.Series(s, dtype=object), format="ISO8601", utc=True, errors="coerce")
    # pandas may pick a coarser unit than ns; keep to the ns range so the cast is exact.
    lo, hi = pd.Timestamp.min.tz_localize("UTC"), pd.Timestamp.max.tz_localize("UTC")
    bad = np.flatnonzero((ts.isna() | (ts < lo) | (ts > hi)).to_numpy())
    if bad.size:
        i = int(bad[0])
        raise TraceError(f"{raw.at(i)}: field 'Timestamp': invalid or out-of-range date "
                         f"(years 1678-2261): {_show(s[i])}")
    if naive:
        report.note(f"{naive} timestamp(s) without a UTC offset taken as UTC (AWS uses UTC)")
    return ts.dt.as_unit("ns").dt.tz_localize(None).to_numpy().astype(np.int64)


def _prices(raw: _Raw) -> np.ndarray:
    s = raw.cols["price"]
    p = pd.to_numeric(pd.Series(s, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    nan = np.isnan(p)
    # zero is refused like a negative price: AWS never sells capacity for nothing, and a
    # free instance makes "work per dollar" (the cost-efficiency scaler) undefined
    for mask, what in ((nan, "not a number"), (~nan & ~np.isfinite(p), "not finite"),
                       (~nan & (p < 0), "negative"), (p == 0, "zero (prices must be > 0)")):
        bad = np.flatnonzero(mask)
        if bad.size:
            i = int(bad[0])
            raise TraceError(f"{raw.at(i)}: field 'SpotPrice': {what}: {_show(s[i])}")
    return p


def _select(raw: _Raw, key: str, want: str | None, present: set[str], keep: np.ndarray,
            report: LoadReport, what: str) -> str | None:
    """Keep records whose ``key`` field is ``want``; with ``want=None`` require a single value."""
    if key not in present:
        report.note(f"no {FIELDS[key]} field: all records taken as one {what}")
        return want
    vals = np.array(raw.cols[key], dtype=object)
    seen = sorted(set(vals[keep].tolist()))
    if want is None:
        if len(seen) > 1:
            raise ConfigError(f"{raw.src}: records from several {what}s ({', '.join(seen)}); "
                              f"choose one with {key}=...")
        return seen[0]
    match = vals == want
    if not np.any(match & keep):
        raise ConfigError(f"{raw.src}: no records for {what} {want!r}; present: {', '.join(seen)}")
    for other in seen:
        if other != want:
            n = int(np.count_nonzero(keep & (vals == other)))
            report.drop(f"{what} {other!r} (not {want!r})", n)
    keep &= match
    return want


def _origin(origin: datetime | str | None, first_ns: int) -> pd.Timestamp:
    """The origin as a UTC ns Timestamp (default: ``first_ns`` floored to whole microseconds,
    so ``SpotHistory.origin``, a datetime, is exact)."""
    if origin is None:
        return pd.Timestamp(first_ns, tz="UTC").floor("us")
    if isinstance(origin, str):
        try:
            origin = datetime.fromisoformat(origin.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(f"origin {origin!r} is not an ISO 8601 time") from None
    if not isinstance(origin, datetime) or origin.tzinfo is None:
        raise ConfigError(f"origin must be a timezone-aware datetime, got {origin!r}")
    try:
        return pd.Timestamp(origin).tz_convert("UTC").as_unit("ns")
    except (OverflowError, ValueError):  # OutOfBoundsDatetime is a ValueError
        raise ConfigError(f"origin {origin!r} is outside the years 1678-2261") from None


def _seconds_since(ts_ns: np.ndarray, base: pd.Timestamp) -> np.ndarray:
    """Float seconds from ``base``; whole seconds and fractions apart, since a difference of
    two ns counts can overflow int64 (the ns range spans 584 years, int64 ns only 292)."""
    sec, frac = np.divmod(ts_ns, 10**9)
    bsec, bfrac = divmod(base.value, 10**9)
    return (sec - bsec).astype(np.float64) + (frac - bfrac) / 1e9


def _series(raw: _Raw, idx: np.ndarray, codes: np.ndarray, types: np.ndarray, secs: np.ndarray,
            prices: np.ndarray, report: LoadReport) -> dict[str, PriceSeries]:
    """One step function per type from records sorted by (type, time)."""
    out: dict[str, PriceSeries] = {}
    repeats = 0
    bounds = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    for lo, hi in zip(np.concatenate([[0], bounds]), np.concatenate([bounds, [codes.size]])):
        t, p, ix = secs[lo:hi], prices[lo:hi], idx[lo:hi]
        close = np.flatnonzero(np.diff(t) <= 0)
        if close.size:  # distinct instants closer than float seconds resolve (sub-microsecond)
            a, b = sorted((int(ix[close[0]]), int(ix[close[0] + 1])))
            raise TraceError(f"{raw.at(a)} and {raw.unit} {raw.where[b]}: "
                             f"timestamps too close to order")
        change = np.concatenate([[True], p[1:] != p[:-1]])
        repeats += int(np.count_nonzero(~change))
        out[str(types[lo])] = PriceSeries(t[change], p[change])
    report.drop("repeats the previous price of its type (no change)", repeats)
    return out


def _dedupe(raw: _Raw, idx, codes, types, ts_ns, prices, report: LoadReport) -> np.ndarray:
    """Mask of records to keep after removing exact duplicates; conflicts raise."""
    same = (codes[1:] == codes[:-1]) & (ts_ns[1:] == ts_ns[:-1])
    clash = np.flatnonzero(same & (prices[1:] != prices[:-1]))
    if clash.size:
        j = int(clash[0])
        a, b = int(idx[j]), int(idx[j + 1])
        raise TraceError(f"{raw.at(a)} and {raw.unit} {raw.where[b]}: two prices for "
                         f"{types[j]} at the same time {raw.cols['ts'][a]}: "
                         f"{raw.cols['price'][a]} and {raw.cols['price'][b]}")
    report.drop("exact duplicate records", int(np.count_nonzero(same)))
    return np.concatenate([[True], ~same])


def _build(raw: _Raw, zone: str | None, product: str | None,
           origin: datetime | str | None) -> SpotHistory:
    n = len(raw.where)
    if n == 0:
        raise TraceError(f"{raw.src}: no spot price records")
    report = LoadReport(source=raw.src, rows_read=n)
    for note in raw.notes:
        report.note(note)
    present = _check_present(raw)
    ts_all = _timestamps(raw, report)
    prices_all = _prices(raw)
    keep = np.ones(n, dtype=bool)
    product = _select(raw, "product", product, present, keep, report, "product")
    zone = _select(raw, "zone", zone, present, keep, report, "zone")
    idx = np.flatnonzero(keep)
    types = np.array(raw.cols["type"], dtype=object)[idx]
    # Integer codes, not numpy strings: those would drop trailing NULs and merge names.
    codes, _ = pd.factorize(types, sort=True)
    ts_ns = ts_all[idx]
    order = np.lexsort((idx, ts_ns, codes))
    if np.any(order != np.arange(idx.size)):
        report.note("records sorted into time order per type (AWS lists newest first)")
    idx, codes, ts_ns = idx[order], codes[order], ts_ns[order]
    types, prices = types[order], prices_all[idx]
    ok = _dedupe(raw, idx, codes, types, ts_ns, prices, report)
    idx, codes, types, ts_ns, prices = idx[ok], codes[ok], types[ok], ts_ns[ok], prices[ok]
    base = _origin(origin, int(ts_ns.min()))
    secs = _seconds_since(ts_ns, base)
    series = _series(raw, idx, codes, types, secs, prices, report)
    return SpotHistory(series, base.to_pydatetime(), zone, product, report)


# --- the compact format (bundled trace) ------------------------------------------------


def write_compact(units: Mapping[str, tuple[np.ndarray, np.ndarray]], path: str | Path,
                  origin: datetime, zone: str, product: str = DEFAULT_PRODUCT,
                  meta: Mapping | None = None) -> None:
    """Parquet: ``type`` (dictionary), ``t`` (int32 s from origin, delta-coded), ``price``
    (int32 in $0.0001, delta-coded), zstd; origin, zone, product and ``meta`` as JSON in the
    schema metadata under ``stratus.spot``. Rows sorted by type (in the given order), then t."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = list(units)
    counts = [units[n][0].size for n in names]
    t = np.concatenate([units[n][0] for n in names]).astype(np.int64)
    u = np.concatenate([units[n][1] for n in names]).astype(np.int64)
    if t.size and (t.min() < -(2**31) or t.max() >= 2**31 or u.min() < 0 or u.max() >= 2**31):
        raise ConfigError("compact spot format: times or prices out of int32 range")
    # int8 codes (the bundled file's) wrap past 127 types: a large catalog needs wider ones
    code_type = np.int8 if len(names) <= 127 else np.int32
    codes = np.repeat(np.arange(len(names), dtype=code_type), counts)
    table = pa.table({
        "type": pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(names, pa.string())),
        "t": pa.array(t.astype(np.int32)),
        "price": pa.array(u.astype(np.int32)),
    })
    info = {"version": COMPACT_VERSION, "origin": _iso(origin), "zone": zone, "product": product,
            "time_unit": "s", "price_unit_usd_per_hour": 1 / UNITS_PER_USD, **dict(meta or {})}
    table = table.replace_schema_metadata({META_KEY: json.dumps(info, sort_keys=True).encode()})
    pq.write_table(table, str(path), compression="zstd", compression_level=19,
                   use_dictionary=["type"], write_statistics=False,
                   column_encoding={"t": "DELTA_BINARY_PACKED", "price": "DELTA_BINARY_PACKED"})


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat().replace("+00:00", "Z")


def read_compact_table(path: str | Path):
    """The compact file as (pyarrow table, metadata dict); TraceError if it is not one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(str(path))
        names = table.column_names  # a damaged schema's names fail to decode only here
    except (OSError, ValueError, pa.ArrowException) as exc:  # a damaged footer raises any
        raise TraceError(f"{path}: cannot read as Parquet: {' '.join(str(exc).split())}") \
            from None
    for col in ("type", "t", "price"):
        if col not in names:
            raise TraceError(f"{path}: compact spot trace lacks column {col!r}")
    try:
        info = json.loads((table.schema.metadata or {})[META_KEY])
        _compact_origin(info)
    except (KeyError, ValueError, TypeError, AttributeError, OverflowError):
        raise TraceError(f"{path}: compact spot trace lacks valid 'stratus.spot' metadata "
                         "(origin, zone, product)") from None
    return table, info


def _compact_origin(info: dict) -> pd.Timestamp:
    origin = datetime.fromisoformat(info["origin"].replace("Z", "+00:00"))
    if origin.tzinfo is None:
        raise ValueError("naive origin")
    return pd.Timestamp(origin).tz_convert("UTC").as_unit("ns")


def _compact_columns(src: str, table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(type names, per-row type code, t, price units)."""
    import pyarrow as pa

    t, u = table.column("t"), table.column("price")
    if not (pa.types.is_integer(t.type) and pa.types.is_integer(u.type)):
        raise TraceError(f"{src}: compact spot trace: columns 't' and 'price' must be integers")
    for col in ("type", "t", "price"):
        if table.column(col).null_count:
            raise TraceError(f"{src}: compact spot trace: column {col!r} has empty values")
    col = table.column("type").combine_chunks()
    if not pa.types.is_dictionary(col.type):
        col = col.dictionary_encode()
    names = np.asarray([str(x) for x in col.dictionary.to_pylist()], dtype=object)
    codes = col.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    if len(set(names.tolist())) != names.size:
        raise TraceError(f"{src}: compact spot trace: duplicate type names")
    return names, codes, t.to_numpy().astype(np.int64), u.to_numpy().astype(np.int64)


def _read_compact(path: Path, zone: str | None, product: str | None,
                  origin: datetime | str | None) -> SpotHistory:
    table, info = read_compact_table(path)
    src = str(path)
    for key, want in (("zone", zone), ("product", product)):
        if want is not None and info.get(key) != want:
            raise ConfigError(f"{src}: no records for {key} {want!r}; present: {info.get(key)}")
    names, codes, t, u = _compact_columns(src, table)
    file_origin = _compact_origin(info)
    base = file_origin if origin is None else _origin(origin, 0)
    shift = (file_origin.to_pydatetime() - base.to_pydatetime()).total_seconds()
    series = {}
    for k, name in enumerate(names.tolist()):
        rows = np.flatnonzero(codes == k)
        if not rows.size:
            continue
        tt, uu = t[rows], u[rows]
        bad = np.flatnonzero(np.concatenate([[False], np.diff(tt) <= 0]) | (uu <= 0))
        if bad.size:
            raise TraceError(f"{src}: record {int(rows[bad[0]]) + 1}: type {name!r}: times must "
                             "increase and prices be > 0")
        series[str(name)] = PriceSeries(tt + shift, uu / UNITS_PER_USD)
    report = LoadReport(source=src, rows_read=int(t.size))
    return SpotHistory(series, base.to_pydatetime(), info.get("zone"), info.get("product"),
                       report, meta=info)


def write_aws(series: Mapping[str, PriceSeries], path: str | Path, origin: datetime, zone: str,
              product: str = DEFAULT_PRODUCT) -> None:
    """Write history as AWS prints it, newest first: .json, .csv, .tsv or .txt (``--output
    text``), optionally .gz. Times are written to the millisecond, prices to $0.000001."""
    path = Path(path)
    rows = []
    for name, s in series.items():
        start = pd.Timestamp(origin).tz_convert("UTC")
        when = start + pd.to_timedelta(np.round(s.times, 3), unit="s")
        rows.append(pd.DataFrame({"Timestamp": when.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z",
                                  "InstanceType": name, "ProductDescription": product,
                                  "SpotPrice": [f"{p:.6f}" for p in s.prices],
                                  "AvailabilityZone": zone, "_t": s.times}))
    df = pd.concat(rows, ignore_index=True).sort_values("_t", ascending=False, kind="stable")
    df = df.drop(columns="_t")
    ext = [x.lower() for x in path.suffixes if x.lower() != ".gz"][-1:] or [""]
    if ext[0] == ".json":
        text = json.dumps({"SpotPriceHistory": df.to_dict("records")}, indent=1) + "\n"
    elif ext[0] in (".csv", ".tsv"):
        text = df.to_csv(index=False, sep="," if ext[0] == ".csv" else "\t", lineterminator="\n")
    elif ext[0] == ".txt":
        cols = [FIELDS[k] for k in TEXT_ORDER]
        text = "".join("SPOTPRICEHISTORY\t" + "\t".join(r) + "\n"
                       for r in df[cols].itertuples(index=False))
    else:
        raise ConfigError(f"{path}: write_aws needs a .json, .csv, .tsv or .txt name "
                          "(optionally .gz)")
    data = text.encode()
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)


# --- public API -----------------------------------------------------------------------


def load_spot_history(path: str | Path, zone: str | None = None,
                      product: str | None = DEFAULT_PRODUCT,
                      origin: datetime | str | None = None, fmt: str | None = None) -> SpotHistory:
    """Read a spot price history file (format by ``fmt``, else extension, else content).

    Keeps the records of ``product`` (None: the file must hold one) and ``zone`` (None: the
    file must hold one), counting the others in ``report.dropped``. Times are seconds from
    ``origin`` (default: the earliest kept record)."""
    if fmt is not None and fmt not in FORMATS:
        raise ConfigError(f"unknown spot trace format {fmt!r}; known: {', '.join(FORMATS)}")
    path = Path(path)
    data = _read_bytes(path)
    if fmt == "parquet" or (fmt is None and (data[:4] == b"PAR1" or path.suffix == ".parquet")):
        return _read_compact(path, zone, product, origin)
    src = str(path)
    text = _decode(path, data)
    fmt = fmt or _detect(path, text)
    if fmt == "json":
        raw = _parse_json(src, text)
    elif fmt == "text":
        raw = _parse_text(src, text)
    else:
        raw = _parse_delimited(src, text, "\t" if fmt == "tsv" else ",")
    return _build(raw, zone, product, origin)


def spot_price_book(catalog: Catalog, history: SpotHistory | Mapping[str, PriceSeries],
                    name: str = "") -> PriceBook:
    """On-demand prices for ``catalog`` plus a spot series for every type in it.

    Every catalog type must have a history (else one ConfigError naming the missing types
    and, for a loaded file, the file); types the catalog does not have are ignored."""
    series = history.series if isinstance(history, SpotHistory) else dict(history)
    missing = [t.name for t in catalog if t.name not in series]
    if missing:
        src = f"{history.report.source}: " if isinstance(history, SpotHistory) else ""
        have = sorted(series)
        listed = ", ".join(have[:12]) + (f" and {len(have) - 12} more" if len(have) > 12 else "")
        raise ConfigError(f"{src}spot price history has no prices for {', '.join(missing)} "
                          f"(catalog {catalog.name!r}); it has: {listed or 'none'}. Give a "
                          f"history with every type of the catalog, or leave --spot-prices "
                          f"out for the synthetic spot model")
    spot = {(t.name, SPOT): series[t.name] for t in catalog}
    return PriceBook.on_demand(catalog).with_series(spot, name=name or f"{catalog.name}-spot")


@lru_cache(maxsize=1)
def bundled_history() -> SpotHistory:
    """The bundled synthetic m4 trace (``pricing/data``), read once per process."""
    return load_spot_history(BUNDLED)
