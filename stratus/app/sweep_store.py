"""A sweep's results directory: one Parquet file per finished cell under ``rows/``, named by
the cell's key and written under a temporary name then renamed, so a killed sweep leaves
whole rows or none; a failed cell's row carries ``.failed`` in its name until it succeeds."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

ROWS = "rows"
FAILED = ".failed"


def rows_dir(results: Path) -> Path:
    return results / ROWS


def clean_temporaries(results: Path) -> int:
    """Remove what a killed writer left (hidden temporary names); they were never rows."""
    n = 0
    d = rows_dir(results)
    if d.is_dir():
        for p in d.iterdir():
            if p.name.startswith("."):
                p.unlink(missing_ok=True)
                n += 1
    return n


def finished_keys(results: Path) -> set[str]:
    """Keys of the cells whose row says they ran to the end."""
    d = rows_dir(results)
    if not d.is_dir():
        return set()
    return {p.name[:-len(".parquet")] for p in d.iterdir()
            if p.name.endswith(".parquet") and not p.name.startswith(".")
            and not p.name.endswith(FAILED + ".parquet")}


def write_row(results: Path, row: dict) -> Path:
    """One cell's row, atomically (temporary name in the same directory, then rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = rows_dir(results)
    d.mkdir(parents=True, exist_ok=True)
    ok = row["status"] == "ok"
    name = f"{row['key']}{'' if ok else FAILED}.parquet"
    out = d / name
    tmp = d / f".{name}.{os.getpid()}.tmp"
    try:
        pq.write_table(pa.Table.from_pylist([row]), tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    if ok:  # a success supersedes an earlier failure of the same cell
        (d / f"{row['key']}{FAILED}.parquet").unlink(missing_ok=True)
    return out


def read_rows(results: Path):
    """Every row of the results directory as a DataFrame (failed cells included)."""
    import pandas as pd
    import pyarrow.parquet as pq

    d = rows_dir(results)
    files = sorted(p for p in d.glob("*.parquet") if not p.name.startswith(".")) \
        if d.is_dir() else []
    if not files:
        return pd.DataFrame()
    frames = [pq.read_table(p).to_pandas() for p in files]
    return pd.concat(frames, ignore_index=True, sort=False)


def cell_key(identity: dict) -> str:
    """A stable key for a cell: the hash of its whole configuration (canonical JSON)."""
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


_BIG = 256 << 20


def _file_digest(path: Path, h) -> None:
    size = path.stat().st_size
    h.update(f"{path.name}:{size}".encode())
    with open(path, "rb") as f:
        if size <= _BIG:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        else:  # a multi-GB raw trace: its size, head and tail (decisions.md)
            h.update(f.read(1 << 20))
            f.seek(size - (1 << 20))
            h.update(f.read(1 << 20))


def trace_hash(spec: str) -> str:
    """The content hash of a trace: a synthetic spec is its text (the generator is covered
    by the code version); a file its bytes; a directory every file's name and bytes."""
    h = hashlib.sha256()
    if spec.startswith("synthetic:"):
        h.update(spec.encode())
        return "spec:" + h.hexdigest()[:20]
    p = Path(spec)
    if p.is_dir():
        for f in sorted(x for x in p.rglob("*") if x.is_file()):
            h.update(str(f.relative_to(p)).encode())
            _file_digest(f, h)
    else:
        _file_digest(p, h)
    return "sha256:" + h.hexdigest()[:20]


def file_hash(path: str) -> str:
    h = hashlib.sha256()
    _file_digest(Path(path), h)
    return "sha256:" + h.hexdigest()[:20]


def input_hashes(spec) -> dict:
    """The content hash of every input a cell's spec names: the trace, a spot price file,
    catalog files (a built-in catalog and a synthetic trace are covered by the code
    version and the spec's text)."""
    out = {"trace": trace_hash(spec.trace)}
    spot = getattr(spec, "spot_prices", None)
    if spot:
        out["spot_prices"] = file_hash(spot)
    out.update(catalog_hashes({k: getattr(spec, k) for k in ("catalog", "cloud_catalog")
                               if getattr(spec, k, None) is not None}))
    return out


#: the results directory's format: how its rows' keys are made (1: argv-era keys, before
#: every cell was a spec; such rows are never reused)
FORMAT_FILE, FORMAT = "stratus-results.json", 2


def check_format(results: Path) -> None:
    """Refuse a results directory whose rows were keyed another way: rerunning into it
    would mix stale rows with new ones in one report."""
    from stratus.errors import ConfigError

    marker = results / FORMAT_FILE
    version = None
    if marker.is_file():
        try:
            version = json.loads(marker.read_text()).get("format")
        except (ValueError, AttributeError, OSError):
            version = "unreadable"
    has_rows = rows_dir(results).is_dir() and any(
        p.suffix == ".parquet" for p in rows_dir(results).iterdir())
    if version is None and not has_rows:
        return
    if version != FORMAT:
        raise ConfigError(f"{results}: its rows were written by an older stratus (results "
                          f"format {version or 1}, now {FORMAT}: cells are keyed by their "
                          f"typed spec and input files); sweep into a new directory ("
                          f"`stratus report` still reads this one)")


def mark_format(results: Path) -> None:
    marker = results / FORMAT_FILE
    if not marker.exists():
        tmp = results / f".{FORMAT_FILE}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"format": FORMAT}))
        os.replace(tmp, marker)


def catalog_hashes(options: dict) -> dict:
    """The content hash of each catalog option that names a file (a built-in name is
    covered by the code version)."""
    from pricing.catalog_files import builtin_names

    out = {}
    for key, v in options.items():
        k = key.replace("-", "_")
        if k in ("catalog", "cloud_catalog") and str(v) not in builtin_names():
            h = hashlib.sha256()
            _file_digest(Path(str(v)), h)
            out[k] = "sha256:" + h.hexdigest()[:20]
    return out


_CODE: list[str] = []
# modules that read results but never make them: editing the report keeps finished rows
_NOT_RESULTS = {"stratus/app/report_html.py", "stratus/app/figures.py",
                "stratus/app/figures_waiting.py", "stratus/app/paper.py"}


def code_version() -> str:
    """A hash of the project's source (every module a result could depend on) and its
    version: a changed scheduler or generator never reuses an old row."""
    if _CODE:
        return _CODE[0]
    root = Path(__file__).resolve().parents[2]  # stratus/app/sweep_store.py
    h = hashlib.sha256()
    for pkg in ("stratus", "packers", "scalers", "pricing", "traces"):
        for f in sorted((root / pkg).rglob("*")):
            rel = f.relative_to(root).as_posix()
            if (f.is_file() and f.suffix in (".py", ".json", ".csv", ".parquet", ".gz", ".toml")
                    and rel not in _NOT_RESULTS and "__pycache__" not in rel):
                h.update(rel.encode())
                h.update(f.read_bytes())
    try:
        from importlib.metadata import version

        h.update(version("stratus-vc").encode())
    except Exception:  # not installed (run from a checkout): the sources say it all
        pass
    _CODE.append(h.hexdigest()[:16])
    return _CODE[0]
