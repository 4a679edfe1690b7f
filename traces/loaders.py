"""Trace formats by name. A format module provides ``load(path, **options) -> Trace`` and,
if it can stream big inputs, ``convert(path, out_parquet, **options) -> LoadReport``.

On the command line a format may carry options: ``--format swf?per_processor=1``.
Option values arrive as strings; each loader converts and checks its own.

``stratus traces convert`` is in ``stratus.traces.conversion`` (it reads specs, which this module
serves).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl

from stratus.base.errors import ConfigError
from stratus.base.inputs import check_input
from stratus.traces.schema import LoadReport, Trace

FORMATS: dict[str, tuple[str, str]] = {
    # name: (module, what it reads)
    "canonical": ("stratus.traces.loaders", "the canonical Parquet schema (traces/schema.py)"),
    "google2011": ("stratus.traces.google2011", "Google cluster trace 2011 v2.1: a directory with "
                   "job_events/ and task_events/ CSV(.gz) parts"),
    "swf": ("stratus.traces.swf", "Standard Workload Format 2.2 (Parallel Workloads Archive), .swf[.gz]"),
    "umass": ("stratus.traces.umass", "UMass/LSF job table (CSV, Parquet or HDF5)"),
    "alibaba-gpu2023": ("stratus.traces.alibaba_gpu", "Alibaba GPU cluster trace 2023 (openb): a "
                        "pod list CSV or its folder (traces/alibaba_gpu.py)"),
    "generic": ("stratus.traces.generic", "any CSV/Parquet with a column mapping (see traces/generic.py)"),
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
    check_input(path)
    name, options = parse_format(fmt)
    return format_module(name).load(Path(path), **options)


def convert_file(path: Path, fmt: str, out: Path) -> LoadReport:
    """Write ``path`` as canonical Parquet at ``out``, streaming when the format can."""
    check_input(path)
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
