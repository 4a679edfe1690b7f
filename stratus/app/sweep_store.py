"""A sweep's results directory: one Parquet file per finished cell under ``rows/``, named by
the cell's key and written under a temporary name then renamed, so a killed sweep leaves
whole rows or none; a failed cell's row carries ``.failed`` in its name until it succeeds."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from stratus.base import tempnames

ROWS = "rows"
FAILED = ".failed"
#: a row file's name: its cell's key, ``.failed`` while the cell has only failed
ROW_NAME = re.compile(r"^([0-9a-f]{24})(\.failed)?\.parquet$")
def rows_dir(results: Path) -> Path:
    return results / ROWS


host, pid_alive = tempnames.host, tempnames.pid_alive


def temporary(path: Path) -> Path:
    """The name ``path`` is written under before its rename (stratus.base.tempnames)."""
    return tempnames.fresh(path)


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from /proc), so that a pid
    reused by another process is not taken for it; None where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def clean_temporaries(results: Path) -> list[str]:
    """Remove the temporary files of sweeps that died (SIGKILL, power loss): only names a
    sweep writes, made on this host by a process that is gone (``tempnames.abandoned``).
    Anything else (a user's dot-file, a running sweep's file, another host's) stays."""
    removed = []
    for d in (results, rows_dir(results), results / "configs", results / "claims"):
        if not d.is_dir():
            continue
        for p in d.iterdir():
            if tempnames.abandoned(p.name):
                try:
                    p.unlink()
                    removed.append(p.name)
                except FileNotFoundError:  # another sweep cleaned it first
                    pass
    return removed


def check_row(path: Path, key: str | None = None) -> str | None:
    """Why ``path`` is not one whole result row (of the cell ``key``), or None if it is."""
    import pyarrow.parquet as pq

    try:
        t = pq.read_table(path)
    except Exception as exc:  # truncated, empty, not Parquet: pyarrow raises several types
        return f"not a readable Parquet file ({type(exc).__name__})"
    if t.num_rows != 1:
        return f"{t.num_rows} rows, not one"
    missing = {"key", "status", "command"} - set(t.column_names)
    if missing:
        return f"not a stratus result row (no {', '.join(sorted(missing))} column)"
    row = t.slice(0, 1).to_pylist()[0]
    if key is not None and row["key"] != key:
        return f"holds the row of cell {row['key']}, not {key}"
    if row["status"] not in ("ok", "failed"):
        return f"status {row['status']!r}"
    return None


def finished_keys(results: Path) -> set[str]:
    """Keys of the cells whose row file says, by its name, that they ran to the end."""
    return finished_rows(results, checked=False)[0]


def finished_rows(results: Path, checked: bool = True) -> tuple[set[str], dict[str, str]]:
    """Keys of the cells that ran to the end, each row read and checked (``check_row``),
    and {bad file name: why}: a bad row's cell is not finished (a sweep reruns it)."""
    d = rows_dir(results)
    keys, bad = set(), {}
    if d.is_dir():
        for p in d.iterdir():
            m = ROW_NAME.match(p.name)
            if not m or m[2]:
                continue
            why = check_row(p, m[1]) if checked else None
            if why is None:
                keys.add(m[1])
            else:
                bad[p.name] = why
    return keys, bad


def write_row(results: Path, row: dict) -> Path:
    """One cell's row, atomically (temporary name in the same directory, then rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = rows_dir(results)
    d.mkdir(parents=True, exist_ok=True)
    ok = row["status"] == "ok"
    name = f"{row['key']}{'' if ok else FAILED}.parquet"
    out = d / name
    tmp = temporary(out)
    try:
        pq.write_table(pa.Table.from_pylist([row]), tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    if ok:  # a success supersedes an earlier failure of the same cell
        (d / f"{row['key']}{FAILED}.parquet").unlink(missing_ok=True)
    return out


def read_rows(results: Path, skipped: dict[str, str] | None = None):
    """Every row of the results directory as a DataFrame (failed cells included). A file
    that is not one whole row (truncated, empty, foreign) is left out, and named with the
    reason in ``skipped`` when given."""
    import pandas as pd
    import pyarrow.parquet as pq

    d = rows_dir(results)
    files = sorted(p for p in d.glob("*.parquet") if not p.name.startswith(".")) \
        if d.is_dir() else []
    frames = []
    for p in files:
        m = ROW_NAME.match(p.name)
        why = check_row(p, m[1] if m else None)
        if why is None and not m:
            why = "not named by a cell's key"
        if why is not None:
            if skipped is not None:
                skipped[str(p)] = why
            continue
        frames.append(pq.read_table(p).to_pandas())
    if not frames:
        return pd.DataFrame()
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


#: the results directory's format (1: argv-era keys, before every cell was a spec; 2: keys
#: of typed specs; 3: rows also carry their canonical spec and input hashes, which the
#: report groups by): rows of another format are never reused
FORMAT_FILE, FORMAT = "stratus-results.json", 3


def check_format(results: Path) -> None:
    """Refuse a results directory whose rows were keyed another way: rerunning into it
    would mix stale rows with new ones in one report."""
    from stratus.base.errors import ConfigError

    marker = results / FORMAT_FILE
    version = None
    if marker.is_file():
        try:
            version = json.loads(marker.read_text()).get("format")
        except (ValueError, AttributeError, OSError):
            version = "unreadable"
    has_rows = rows_dir(results).is_dir() and any(  # a temporary name is hidden
        p.suffix == ".parquet" and not p.name.startswith(".")
        for p in rows_dir(results).iterdir())
    if version is None and not has_rows:
        return
    if version != FORMAT:
        raise ConfigError(f"{results}: its rows were written by an older stratus (results "
                          f"format {version or 1}, now {FORMAT}: rows carry their cell's typed "
                          f"spec and input hashes); sweep into a new directory ("
                          f"`stratus report` still reads this one)")


def mark_format(results: Path) -> None:
    marker = results / FORMAT_FILE
    if not marker.exists():
        tmp = temporary(marker)
        try:
            tmp.write_text(json.dumps({"format": FORMAT}))
            os.replace(tmp, marker)
        finally:
            tmp.unlink(missing_ok=True)


def catalog_hashes(options: dict) -> dict:
    """The content hash of each catalog option that names a file (a built-in name is
    covered by the code version)."""
    from stratus.pricing.catalog_files import builtin_names

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
