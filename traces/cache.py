"""A cache of loaded raw-format traces: what a loader made of a Google 2011 directory, an SWF
log, a UMass or a generic CSV table (its format options applied: window, terminal, ...)
kept as canonical Parquet, so the next run reads it in a fraction of a second instead of
loading the raw files again (the real Google window: ~10 s of DuckDB, then ~0.5 s).

* Key: the content of every file the loader reads (names, sizes and bytes, streamed
  through SHA-256), the format's name and options, the path as given (the loader writes it
  into the trace's name and load report), and the code: the package version, the versions
  of the libraries the loaders read with, a hash of the loaders' sources and
  ``CACHE_VERSION``. The content hash is memoized under the files' stat signature (path,
  device, inode, size, mtime and ctime in ns; ctime changes on every write and cannot be
  set back), so a warm run hashes nothing; a changed file is hashed again.
* Entry: ``<cache dir>/traces/<format>-<key>.entry``: a Parquet file of the trace's rows,
  with in its key-value metadata the key, the row count, the columns and their types, a
  checksum of the rows and the trace's name and metadata (load report included, so a
  cached load prints what a fresh one printed); then a trailer, the SHA-256 of every byte
  before it and ``SEAL``. The trailer makes any change to the file visible, wherever it
  falls: a byte of Parquet that the reader never looks at (statistics, padding, the
  writer's name) as much as a row or the load report. An entry that does not check out in
  every one of these (truncated, damaged, another key's, another layout's) is never used:
  it is loaded again and rewritten.
* Writes: to a temporary name in the same directory, read back and checked, then renamed
  into place (``os.replace``); processes that load the same trace at once each write a
  whole entry and the last rename wins; a reader never sees a partial file. A cache that
  cannot be written is a one-line warning, never a failed run.
* Not cached: synthetic traces (generated, not loaded), the canonical format and any input
  that is Parquet already: reading it is what the cache would do.

Where: ``--cache-dir DIR``, else ``$STRATUS_CACHE_DIR``, else ``$XDG_CACHE_HOME/stratus``,
else ``~/.cache/stratus``; ``--no-cache`` (or ``STRATUS_NO_CACHE=1`` when no directory is
given on the command line) turns it off. docs/decisions.md, "Loading once".
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
from pathlib import Path

from stratus.base import tempnames
from stratus.base.errors import ConfigError, TraceError
from stratus.traces import loaders
from stratus.traces.schema import Trace

#: bump when the entry's layout changes, or when a loader's output changes in a way its
#: sources do not show (a data file it reads, a library's behaviour)
CACHE_VERSION = 2  # 2: the SHA-256 trailer over the whole file
ENV_DIR, ENV_OFF = "STRATUS_CACHE_DIR", "STRATUS_NO_CACHE"
META_KEY = b"stratus.cache"
#: the entry's last bytes: SHA-256 (32 bytes) of everything before it, then this mark
SEAL = b"STRATUS1"
SUFFIX = ".entry"
_DIGEST = hashlib.sha256().digest_size
ENTRIES, HASHES = "traces", "hashes"
_HEX = re.compile(r"^[0-9a-f]{64}$")
#: libraries whose behaviour a loaded trace depends on (their versions join the key)
LIBRARIES = ("numpy", "pandas", "pyarrow", "duckdb", "tables")
_CODE: list[dict] = []


# --- where ------------------------------------------------------------------------------------
def default_dir() -> Path | None:
    """``$STRATUS_CACHE_DIR``, else ``$XDG_CACHE_HOME/stratus`` (an absolute one: the XDG
    spec says a relative one is ignored), else ``~/.cache/stratus``; None without a home."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).expanduser().is_absolute():
        return Path(xdg).expanduser() / "stratus"
    try:
        return Path.home() / ".cache" / "stratus"
    except RuntimeError:  # no home directory to be found
        return None


def check_dir(given: str | Path) -> Path:
    """``--cache-dir``'s value: a directory, or a path one can be made at."""
    p = Path(given).expanduser()
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{given}: not a directory (the trace cache is one)")
    return p


def trace_cache(cache_dir: str | Path | None = None, enabled: bool = True) -> TraceCache | None:
    """The cache a command uses: none with ``enabled`` False; ``cache_dir`` if given (the
    command line beats the environment); else none when ``STRATUS_NO_CACHE`` is set to
    anything but 0, else ``default_dir()``."""
    if not enabled:
        return None
    if cache_dir is not None:
        return TraceCache(check_dir(cache_dir))
    if os.environ.get(ENV_OFF, "") not in ("", "0"):
        return None
    root = default_dir()
    return None if root is None else TraceCache(root)


# --- what -------------------------------------------------------------------------------------
def cacheable(path: Path, fmt_name: str) -> bool:
    """Whether loading ``path`` as ``fmt_name`` is worth caching: not the canonical format
    and not a Parquet input (reading those is what the cache does)."""
    if fmt_name == "canonical":
        return False
    p = Path(path)
    if p.is_dir():
        return True
    if p.name.lower().endswith((".parquet", ".pq")):
        return False
    try:
        with open(p, "rb") as fh:
            return fh.read(4) != b"PAR1"
    except OSError:
        return False  # the loader says what is wrong with it


def input_files(path: Path, fmt_name: str, options: dict) -> list[tuple[str, Path]]:
    """(name, file) for every file the loader reads: the format module's ``input_files``
    where it has one (a directory's parts, a mapping file), else the file itself."""
    fn = getattr(loaders.format_module(fmt_name), "input_files", None)
    if fn is not None:
        return list(fn(Path(path), **options))
    return [(Path(path).name, Path(path))]


def _stat_sig(files: list[tuple[str, Path]]) -> list:
    out = []
    for name, p in files:
        st = os.stat(p)
        out.append([name, str(Path(p).resolve()), st.st_dev, st.st_ino, st.st_size,
                    st.st_mtime_ns, st.st_ctime_ns])
    return out


def content_hash(files: list[tuple[str, Path]]) -> str:
    """SHA-256 of every file's name, size and bytes, in order, streamed."""
    h = hashlib.sha256()
    for name, p in files:
        with open(p, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            h.update(f"{len(name)}:{name}:{size}:".encode())
            n = 0
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
                n += len(block)
        if n != size:
            raise OSError(f"{p}: changed while it was read")
    return h.hexdigest()


def code_version() -> dict:
    """What, besides the input, decides a loaded trace: this package's version, the
    libraries' versions, the loaders' sources (traces/ and stratus/base/) and
    CACHE_VERSION."""
    if _CODE:
        return _CODE[0]
    from importlib.metadata import PackageNotFoundError, version

    import stratus.base

    def ver(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    h = hashlib.sha256()
    for root in (Path(__file__).resolve().parent, Path(stratus.base.__file__).resolve().parent):
        for f in sorted(root.rglob("*.py")):
            h.update(f"{root.name}/{f.relative_to(root).as_posix()}".encode())
            h.update(f.read_bytes())
    _CODE.append({"cache": CACHE_VERSION, "stratus": ver("stratus-vc"),
                  "libraries": {n: ver(n) for n in LIBRARIES}, "sources": h.hexdigest()[:24]})
    return _CODE[0]


def frame_checksum(frame) -> str:
    """SHA-256 of the columns, their types and every row's values, in order."""
    import pandas as pd

    h = hashlib.sha256(json.dumps([[str(c), str(t)] for c, t in frame.dtypes.items()]).encode())
    h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return h.hexdigest()


class Damaged(Exception):
    """A cache entry that must not be used; the message says why."""


# --- the cache --------------------------------------------------------------------------------
class TraceCache:
    """Loaded raw-format traces under ``root`` (see the module doc)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"TraceCache({str(self.root)!r})"

    # the one door
    def load(self, path: Path, fmt: str) -> Trace:
        """``loaders.load_file(path, fmt)``, from the cache when it holds it."""
        name, options = loaders.parse_format(fmt)
        if not cacheable(path, name):
            return loaders.load_file(path, fmt)
        try:
            files = input_files(path, name, options)
            sig = _stat_sig(files)
            content = self._content(files, sig)
        except (OSError, TraceError, ConfigError):
            return loaders.load_file(path, fmt)  # the loader says what is wrong
        key = self.key(path, name, options, content)
        entry = self.root / ENTRIES / f"{name}-{key}{SUFFIX}"
        try:
            trace = read_entry(entry, key)
        except FileNotFoundError:
            trace = None
        except Damaged as why:
            _say(f"stratus: warning: trace cache entry {entry} is damaged ({why}); loading "
                 f"{path} again")
            trace = None
        if trace is not None:
            _say(f"note: {path} read from the trace cache: {entry} (--no-cache reads the "
                 "raw files)")
            return trace
        trace = loaders.load_file(path, fmt)
        try:
            unchanged = _stat_sig(files) == sig
        except OSError:
            unchanged = False
        if unchanged:  # else it changed while being loaded: what was loaded is not `content`
            self.write(entry, key, trace)
        return trace

    @staticmethod
    def key(path: Path, fmt_name: str, options: dict, content: str) -> str:
        doc = {"content": content, "format": fmt_name, "path": str(path),
               "options": sorted((str(k), str(v)) for k, v in options.items()),
               "code": code_version()}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]

    def _content(self, files: list[tuple[str, Path]], sig: list) -> str:
        """The files' content hash, memoized under their stat signature."""
        memo = self.root / HASHES / (hashlib.sha256(json.dumps(sig).encode()).hexdigest()[:32]
                                     + ".txt")
        try:
            known = memo.read_text().strip()
            if _HEX.match(known):
                return known
        except (OSError, UnicodeDecodeError):
            pass
        content = content_hash(files)
        with contextlib.suppress(OSError):  # no memo: the next run hashes again
            _write_atomic(memo, lambda tmp: tmp.write_text(content + "\n"))
        return content

    def write(self, entry: Path, key: str, trace: Trace) -> bool:
        """Write ``trace`` as the entry ``key``, checked before it is renamed into place;
        False (and a warning if the disk refused) when it was not written."""
        info = entry_info(key, trace)
        if info is None:
            return False  # metadata JSON cannot hold: load it every time
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            _clean(entry.parent)
            _clean(self.root / HASHES)

            def write(tmp: Path) -> None:
                _write_entry(tmp, trace, info)
                read_entry(tmp, key)  # what a reader will get: checked before it is public
            _write_atomic(entry, write)
        except OSError as exc:
            _say(f"stratus: warning: cannot write the trace cache {entry}: "
                 f"{exc.strerror or exc}; going on without it")
            return False
        except Damaged:
            return False  # does not read back as written: never published
        return True


def entry_info(key: str, trace: Trace) -> dict | None:
    """The entry's metadata for ``trace``; None if its metadata does not survive JSON as it
    is, in its order too (a load report's drops print in the order they were counted)."""
    try:
        text = json.dumps(trace.meta)
        meta = json.loads(text)
    except (TypeError, ValueError):
        return None
    if meta != trace.meta or json.dumps(meta) != text:
        return None
    f = trace.frame
    return {"cache": CACHE_VERSION, "key": key, "rows": len(f),
            "columns": [[str(c), str(t)] for c, t in f.dtypes.items()],
            "checksum": frame_checksum(f), "name": trace.name, "meta": meta}


def sealed(body: bytes) -> bytes:
    """``body`` followed by its trailer: its SHA-256 and ``SEAL``."""
    return body + hashlib.sha256(body).digest() + SEAL


def unsealed(raw: bytes) -> bytes:
    """What ``sealed`` was given, if ``raw`` is unchanged since; Damaged otherwise."""
    n = _DIGEST + len(SEAL)
    if len(raw) < n or raw[-len(SEAL):] != SEAL:
        raise Damaged("no trailer (truncated, or not an entry)")
    body, digest = raw[:-n], raw[-n:-len(SEAL)]
    if hashlib.sha256(body).digest() != digest:
        raise Damaged("its bytes do not match their SHA-256 (changed after it was written)")
    return body


def _write_entry(path: Path, trace: Trace, info: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(trace.frame, preserve_index=False)
    md = {b"stratus.trace.name": trace.name.encode(),
          META_KEY: json.dumps(info).encode()}  # not sorted: the meta's order is kept
    buf = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata(md), buf)
    path.write_bytes(sealed(buf.getvalue().to_pybytes()))


def read_entry(path: Path, key: str) -> Trace:
    """The trace an entry holds, checked against ``key`` and its own metadata; Damaged if
    anything is off, FileNotFoundError if there is none."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:  # a directory in its place, no permission to read
        raise Damaged(f"not readable: {exc.strerror or type(exc).__name__}") from None
    return decode_entry(raw, key)


def decode_entry(raw: bytes, key: str) -> Trace:
    """The trace the bytes of an entry hold, checked as ``read_entry`` says."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    body = unsealed(raw)
    try:
        table = pq.read_table(pa.BufferReader(body))
        frame = table.to_pandas(ignore_metadata=True)
    except Exception as exc:  # truncated, not Parquet, bad pages: pyarrow raises many types
        raise Damaged(f"not readable: {type(exc).__name__}") from None
    md = (table.schema.metadata or {}).get(META_KEY)
    if md is None:
        raise Damaged("no stratus.cache metadata")
    try:
        info = json.loads(md)
        ok = isinstance(info, dict) and isinstance(info.get("meta"), dict) \
            and isinstance(info.get("name"), str)
    except ValueError:
        ok = False
    if not ok:
        raise Damaged("unreadable stratus.cache metadata")
    if info.get("cache") != CACHE_VERSION:
        raise Damaged(f"entry layout {info.get('cache')}, not {CACHE_VERSION}")
    if info.get("key") != key:
        raise Damaged("holds another key's trace")
    if info.get("rows") != len(frame):
        raise Damaged(f"{len(frame)} rows, its metadata says {info.get('rows')}")
    columns = [[str(c), str(t)] for c, t in frame.dtypes.items()]
    if info.get("columns") != columns:
        raise Damaged("columns or their types differ from its metadata")
    if info.get("checksum") != frame_checksum(frame):
        raise Damaged("rows do not match their checksum")
    # the rows are those of a validated trace (checksum and types above): not validated again
    return Trace(frame, name=info["name"], meta=info["meta"], validated=True)


def _write_atomic(out: Path, write) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = tempnames.fresh(out)
    try:
        write(tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def _clean(folder: Path) -> None:
    """Remove temporary files of processes of this host that died while writing."""
    if not folder.is_dir():
        return
    for p in folder.iterdir():
        if tempnames.abandoned(p.name):
            p.unlink(missing_ok=True)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def load(path: Path, fmt: str, cache: TraceCache | None) -> Trace:
    """``path`` loaded as ``fmt``, through ``cache`` when there is one."""
    if cache is None:
        return loaders.load_file(path, fmt)
    return cache.load(Path(path), fmt)
