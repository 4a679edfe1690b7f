"""Instance catalogs from files: TOML or CSV, strict, one clear error naming the file, the
row and the field. Also the built-in catalogs shipped as TOML in ``pricing/data``.

TOML: file-level ``region``, ``as_of``, ``source`` (strings) and one ``[[types]]`` table
per type. CSV: a header of field names, one row per type; ``#`` lines are comments, and
``# region = ...``, ``# as_of = ...``, ``# source = ...`` set the file-level keys.
Per type: ``name``, ``vcpu``, ``mem_gib``, ``ondemand_hourly`` (required); ``family``
(default: the name before its first ``.``), ``gpus`` (whole number >= 0, default 0),
``reserved_hourly`` (> 0), ``source`` (text) and ``verified`` (true/false) optional; a
price is unverified unless its type says ``verified = true`` (the built-in files say so,
or not, on every type).
"""

from __future__ import annotations

import csv
import io
import math
import re
import tomllib
from pathlib import Path

from stratus.base.errors import ConfigError
from stratus.pricing.catalog import CATALOGS, Catalog, InstanceType

DATA_DIR = Path(__file__).resolve().parent / "data"
PREFIX = "catalog-"  # pricing/data/catalog-NAME.toml is built-in catalog NAME
FILE_KEYS = ("region", "as_of", "source")
REQUIRED = ("name", "vcpu", "mem_gib", "ondemand_hourly")
OPTIONAL = ("family", "gpus", "reserved_hourly", "source", "verified")
FIELDS = REQUIRED + OPTIONAL
_META = re.compile(r"^#\s*(region|as_of|source)\s*=\s*(.*?)\s*$")
_CACHE: dict = {}


def builtin_names() -> list[str]:
    """The built-in catalogs: those in Python first, then the TOML files, by name."""
    files = sorted(p.name[len(PREFIX):-len(".toml")] for p in DATA_DIR.glob(f"{PREFIX}*.toml"))
    return [*CATALOGS, *(n for n in files if n not in CATALOGS)]


def load_catalog(name_or_path: str) -> Catalog:
    """A built-in catalog by name, or a ``.toml``/``.csv`` catalog file by path."""
    text = str(name_or_path)
    if text in CATALOGS:
        return CATALOGS[text]
    builtin = DATA_DIR / f"{PREFIX}{text}.toml"
    if "/" not in text and builtin.is_file():
        return _cached(builtin, name=text)
    p = Path(text)
    if p.suffix.lower() not in (".toml", ".csv"):
        if p.exists():
            raise ConfigError(f"catalog file {text}: unknown extension {p.suffix!r} "
                              f"(a catalog file is .toml or .csv)")
        raise ConfigError(f"unknown catalog {text!r}; known: {', '.join(builtin_names())}, "
                          f"or a .toml or .csv file")
    if not p.exists():
        raise ConfigError(f"catalog file {text}: no such file")
    if not p.is_file():
        raise ConfigError(f"catalog file {text}: not a file")
    # named by its path, so a user's "m4.toml" is never taken for the built-in m4
    return _cached(p, name=text, origin=text)


def _cached(path: Path, name: str, origin: str | None = None) -> Catalog:
    """Each file is parsed once per process (until it changes)."""
    try:
        st = path.stat()
        key = (str(path.resolve()), st.st_mtime_ns, st.st_size, name)
    except OSError as exc:
        raise ConfigError(f"catalog file {path}: {exc.strerror or exc}") from None
    if key not in _CACHE:
        _CACHE[key] = read_catalog(path, name=name, origin=origin or name)
    return _CACHE[key]


def read_catalog(path: str | Path, name: str | None = None, origin: str | None = None) -> Catalog:
    """Parse one catalog file (strict; ConfigError names the file, row and field)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"catalog file {p}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"catalog file {p}: not UTF-8 text") from None
    ext = p.suffix.lower()
    if ext == ".toml":
        meta, rows = _toml_rows(p, text)
    elif ext == ".csv":
        meta, rows = _csv_rows(p, text)
    else:
        raise ConfigError(f"catalog file {p}: unknown extension {p.suffix!r} "
                          f"(a catalog file is .toml or .csv)")
    if not rows:
        raise ConfigError(f"catalog file {p}: no instance types (an empty catalog)")
    types, seen = [], {}
    for where, row in rows:
        t = _instance_type(p, where, row)
        if t.name in seen:
            raise ConfigError(f"catalog file {p}: {where} ({t.name}): field 'name': duplicate "
                              f"name, first at {seen[t.name]}")
        seen[t.name] = where
        types.append(t)
    return Catalog(types, name=name or p.stem, origin=origin or str(p), **meta)


def _toml_rows(p: Path, text: str):
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"catalog file {p}: not valid TOML: {exc}") from None
    for k in doc:
        if k not in (*FILE_KEYS, "types"):
            raise ConfigError(f"catalog file {p}: unknown file-level key {k!r} (known: "
                              f"{', '.join(FILE_KEYS)} and [[types]])")
    meta = {}
    for k in FILE_KEYS:
        if k in doc:
            if not isinstance(doc[k], str):
                raise ConfigError(f"catalog file {p}: file-level key {k!r} must be a string")
            meta[k] = doc[k]
    types = doc.get("types", [])
    if not isinstance(types, list) or not all(isinstance(t, dict) for t in types):
        raise ConfigError(f"catalog file {p}: 'types' must be [[types]] tables")
    return meta, [(f"types[{i}]", t) for i, t in enumerate(types, 1)]


def _csv_rows(p: Path, text: str):
    meta: dict = {}
    lines = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            m = _META.match(line.strip())
            if m:
                meta[m.group(1)] = m.group(2)
        elif line.strip():
            lines.append((n, line))
    if not lines:
        return meta, []
    parsed = []
    for n, line in lines:
        try:
            parsed.append((n, next(csv.reader(io.StringIO(line), strict=True))))
        except csv.Error as exc:
            raise ConfigError(f"catalog file {p}: line {n}: not valid CSV: {exc}") from None
    (hn, header), body = parsed[0], parsed[1:]
    header = [h.strip() for h in header]
    for h in header:
        if h not in FIELDS:
            raise ConfigError(f"catalog file {p}: line {hn} (header): unknown column {h!r} "
                              f"(known: {', '.join(FIELDS)})")
        if header.count(h) > 1:
            raise ConfigError(f"catalog file {p}: line {hn} (header): column {h!r} twice")
    for f in REQUIRED:
        if f not in header:
            raise ConfigError(f"catalog file {p}: line {hn} (header): field {f!r} missing "
                              f"(required: {', '.join(REQUIRED)})")
    rows = []
    for n, cells in body:
        if len(cells) != len(header):
            name = cells[header.index("name")].strip() if len(cells) > header.index("name") else ""
            raise ConfigError(f"catalog file {p}: line {n}{f' ({name})' if name else ''}: "
                              f"{len(cells)} fields, the header has {len(header)}")
        rows.append((f"line {n}", {h: c.strip() for h, c in zip(header, cells)
                                   if c.strip() != ""}))
    return meta, rows


def _instance_type(p: Path, where: str, row: dict) -> InstanceType:
    name = row.get("name")
    label = f"{where} ({name})" if isinstance(name, str) and name else where

    def bad(field: str, why: str) -> ConfigError:
        return ConfigError(f"catalog file {p}: {label}: field {field!r}: {why}")

    for k in row:
        if k not in FIELDS:
            raise bad(k, f"unknown field (known: {', '.join(FIELDS)})")
    for k in REQUIRED:
        if k not in row:
            raise bad(k, "missing")
    if not isinstance(name, str) or not name.strip():
        raise bad("name", "must be a non-empty string")
    vals = {}
    for k in ("vcpu", "mem_gib", "ondemand_hourly", "reserved_hourly"):
        if k in row:
            v = _number(row[k])
            if v is None:
                raise bad(k, f"not a number: {row[k]!r}")
            if not v > 0:
                raise bad(k, f"must be positive, got {row[k]!r}")
            vals[k] = v
    gpus = 0
    if "gpus" in row:
        v = _number(row["gpus"])
        if v is None:
            raise bad("gpus", f"not a number: {row['gpus']!r}")
        if v < 0 or not float(v).is_integer():
            raise bad("gpus", f"must be a whole number >= 0, got {row['gpus']!r}")
        gpus = int(v)
    family = row.get("family", name.split(".")[0])
    source = row.get("source", "")
    for k, v in (("family", family), ("source", source)):
        if not isinstance(v, str):
            raise bad(k, f"must be a string, got {v!r}")
    if not family:
        raise bad("family", "must be a non-empty string")
    verified = row.get("verified", False)  # nobody checked it unless the file says so
    if isinstance(verified, str):
        verified = {"true": True, "false": False}.get(verified.lower(), verified)
    if not isinstance(verified, bool):
        raise bad("verified", f"must be true or false, got {row['verified']!r}")
    t = InstanceType(name, vals["vcpu"], vals["mem_gib"], vals["ondemand_hourly"],
                     family=family, reserved_hourly=vals.get("reserved_hourly"), gpus=gpus,
                     source=source, verified=verified)
    if 0 in t.capacity:
        raise bad("vcpu" if t.capacity[0] == 0 else "mem_gib", "too small to hold any task")
    return t


def _number(v) -> float | None:
    """A finite number from a TOML value or a CSV cell; None if it is not one."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        x = float(v)
    elif isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            return None
    else:
        return None
    return x if math.isfinite(x) else None


# --- writing (a catalog as a file a user can edit; round-trips through read_catalog) ----
def to_toml(cat: Catalog) -> str:
    out = [f"{k} = {_toml_str(getattr(cat, k))}" for k in FILE_KEYS if getattr(cat, k)]
    for t in cat.types:
        out += ["", "[[types]]"]
        for f in FIELDS:
            v = getattr(t, f)
            if v is None or (f == "source" and not v):
                continue
            out.append(f"{f} = {_toml_value(v)}")
    return "\n".join(out) + "\n"


def to_csv(cat: Catalog) -> str:
    buf = io.StringIO()
    for k in FILE_KEYS:
        if getattr(cat, k):
            if "\n" in getattr(cat, k):
                raise ConfigError(f"catalog {cat.name!r}: {k} spans lines; CSV cannot hold it")
            buf.write(f"# {k} = {getattr(cat, k)}\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(FIELDS)
    for t in cat.types:
        row = []
        for f in FIELDS:
            v = getattr(t, f)
            row.append("" if v is None else ("true" if v is True else "false" if v is False
                                              else repr(v) if isinstance(v, float) else v))
        w.writerow(row)
    return buf.getvalue()


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return _toml_str(str(v))


#: the name the rest of the project uses: a built-in catalog or a catalog file
get_catalog = load_catalog
