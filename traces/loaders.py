"""Trace formats by name. A format module provides ``load(path, **options) -> Trace`` and,
if it can stream big inputs, ``convert(path, out_parquet, **options) -> LoadReport``.

On the command line a format may carry options: ``--format swf?per_processor=1``.
Option values arrive as strings; each loader converts and checks its own.

``convert_trace`` is what ``stratus traces convert`` runs: any trace spec (a file, the
Google 2011 directory or ``synthetic:NAME?...``) to canonical Parquet, never over an existing
file unless asked, and never leaving a partial file at the output path. (Not named
``convert``: this module is the canonical format's module, and a ``convert`` here would be
taken for that format's streaming converter.)
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl

from stratus.errors import ConfigError, TraceError
from traces.schema import LoadReport, Trace

FORMATS: dict[str, tuple[str, str]] = {
    # name: (module, what it reads)
    "canonical": ("traces.loaders", "the canonical Parquet schema (traces/schema.py)"),
    "google2011": ("traces.google2011", "Google cluster trace 2011 v2.1: a directory with "
                   "job_events/ and task_events/ CSV(.gz) parts"),
    "swf": ("traces.swf", "Standard Workload Format 2.2 (Parallel Workloads Archive), .swf[.gz]"),
    "umass": ("traces.umass", "UMass/LSF job table (CSV, Parquet or HDF5)"),
    "generic": ("traces.generic", "any CSV/Parquet with a column mapping (see traces/generic.py)"),
}


def load(path: Path, **options) -> Trace:
    """The canonical format's loader (this module is its own format module)."""
    if options:
        raise ConfigError(f"format 'canonical' takes no options, got {', '.join(options)}")
    return Trace.from_parquet(path)


def parse_format(spec: str) -> tuple[str, dict[str, str]]:
    name, _, query = spec.partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True))
    if name not in FORMATS:
        raise ConfigError(f"unknown trace format {name!r}; known: {', '.join(FORMATS)}")
    return name, options


def format_module(name: str):
    return importlib.import_module(FORMATS[name][0])


def load_file(path: Path, fmt: str) -> Trace:
    name, options = parse_format(fmt)
    return format_module(name).load(Path(path), **options)


def convert_file(path: Path, fmt: str, out: Path) -> LoadReport:
    """Write ``path`` as canonical Parquet at ``out``, streaming when the format can."""
    name, options = parse_format(fmt)
    mod = format_module(name)
    conv: Callable | None = getattr(mod, "convert", None)
    if conv is not None:
        return conv(Path(path), Path(out), **options)
    trace = mod.load(Path(path), **options)
    trace.to_parquet(out)
    rep = trace.meta.get("load_report")
    if isinstance(rep, dict):
        return LoadReport.from_dict(rep, str(path), len(trace))
    return LoadReport(str(path), len(trace))


def _temporary_name(out: Path) -> Path:
    """A hidden name next to ``out``: same directory, hence same file system, so the final
    rename is atomic. The pid keeps two concurrent conversions apart."""
    return out.with_name(f".{out.name}.{os.getpid()}.tmp")


def convert_trace(spec: str, fmt: str | None, out: Path, force: bool = False) -> LoadReport:
    """Write trace ``spec`` as canonical Parquet at ``out``; see the module doc.

    A synthetic spec carries its own parameters (``synthetic:google?hours=2&seed=3``) and
    takes no format. ``out`` must not exist unless ``force``; the output is written under a
    temporary name in the same directory and renamed into place, so a failed or interrupted
    conversion leaves ``out`` as it was.
    """
    from traces.spec import SYNTHETIC, TraceSource, guess_format

    out = Path(out)
    if out.is_dir():
        raise ConfigError(f"{out}: is a directory; give the output .parquet file")
    if (out.exists() or out.is_symlink()) and not force:
        raise ConfigError(f"{out}: already exists; pass --force to replace it")
    if not out.parent.is_dir():
        raise ConfigError(f"{out.parent}: no such directory for the output")
    if not os.access(out.parent, os.W_OK):  # fail now, not after a long conversion
        raise ConfigError(f"{out.parent}: cannot write there")
    synthetic = spec.startswith(SYNTHETIC)
    if synthetic and fmt:
        raise ConfigError(f"{spec}: a synthetic spec takes no --format (its parameters go "
                          "after '?')")
    tmp = _temporary_name(out)
    try:
        if synthetic:
            trace = TraceSource(spec).full()
            trace.to_parquet(tmp)
            report = LoadReport(spec, len(trace))
        else:
            path = Path(spec)
            if not path.exists():
                raise TraceError(f"{path}: no such file or directory")
            report = convert_file(path, fmt or guess_format(path), tmp)
        os.replace(tmp, out)
    except OSError as exc:  # loaders turn read failures into TraceError: this is the write
        raise TraceError(f"{out}: cannot write the output: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return report
