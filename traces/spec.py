"""Trace specs as the CLI takes them: ``synthetic:NAME[?k=v&...]`` or a file path."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl

from stratus.errors import ConfigError, TraceError
from traces.schema import Trace

SYNTHETIC = "synthetic:"


def parse_synthetic(spec: str) -> tuple[str, dict[str, str]]:
    body = spec[len(SYNTHETIC):]
    name, _, query = body.partition("?")
    params: dict[str, str] = {}
    for k, v in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if k in params:
            raise ConfigError(f"trace spec {spec!r}: parameter {k!r} given twice")
        params[k] = v
    if not name:
        raise ConfigError(f"trace spec {spec!r}: missing generator name, e.g. synthetic:google")
    return name, params


def load_trace(spec: str, fmt: str | None = None, hours: float | None = None,
               start: float | None = None, seed: int | None = None) -> Trace:
    """Load a trace. For synthetic traces ``hours``/``start`` shape the generated window and
    ``seed`` seeds the generator unless the spec names its own; for files they cut a
    window of whole jobs (those submitted and finished inside it, Stratus §4.2)."""
    if spec.startswith(SYNTHETIC):
        from traces.synthetic import generate

        name, params = parse_synthetic(spec)
        if hours is not None:
            params.setdefault("hours", str(hours))
        if start is not None:
            params.setdefault("start_s", str(start))
        if seed is not None:
            params.setdefault("seed", str(seed))
        return generate(name, **params)
    path = Path(spec)
    if not path.exists():
        raise TraceError(f"{spec}: no such file (a trace is a path or synthetic:NAME)")
    fmt = fmt or _guess_format(path)
    trace = _load_file(path, fmt)
    if hours is not None or start is not None:
        s = float(start) if start is not None else float(trace.column("submit_s").min())
        end = s + float(hours) * 3600.0 if hours is not None else float("inf")
        trace = trace.window(s, end, inside=True)
    return trace


def load_history(spec: str, fmt: str | None = None, start: float | None = None,
                 hours: float = 24.0, seed: int | None = None) -> Trace | None:
    """The jobs of the ``hours`` before a replay window that starts at ``start``: what a
    history-based estimator may learn from before the replay (Stratus §3.4). Synthetic
    traces generate the preceding hours (other jobs of the same programs); files give the
    jobs that ran to completion before the window. None if there is nothing before it."""
    if hours <= 0:
        return None
    if spec.startswith(SYNTHETIC):
        from traces.synthetic import generate

        name, params = parse_synthetic(spec)
        begin = float(params.get("start_s", start if start is not None else 0.0))
        params["start_s"] = str(begin - hours * 3600.0)
        params["hours"] = str(hours)
        if seed is not None:
            params.setdefault("seed", str(seed))
        return generate(name, **params)
    path = Path(spec)
    if start is None or not path.exists():
        return None
    full = _load_file(path, fmt or _guess_format(path))
    hist = full.window(float(start) - hours * 3600.0, float(start), inside=True)
    return hist if len(hist) else None


def _guess_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".parquet"):
        return "canonical"
    if name.endswith((".swf", ".swf.gz")):
        return "swf"
    raise ConfigError(f"{path}: cannot tell the trace format from the name; pass --format")


def _load_file(path: Path, fmt: str) -> Trace:
    from traces.loaders import load_file

    return load_file(path, fmt)
