"""Trace specs as the CLI takes them: ``synthetic:NAME[?k=v&...]`` or a file path (with a
format), and the windows a replay cuts from them: ``--start``/``--hours``, seeded random
slices (Stratus §4.2 evaluates twenty 1-day ranges starting at random points), and the
history before a window that a learning estimator may train on."""

from __future__ import annotations

import math
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import numpy as np

from stratus.base.bounds import MAX_HOURS
from stratus.base.errors import ConfigError, TraceError
from stratus.base.inputs import check_input
from stratus.traces.schema import Trace

SYNTHETIC = "synthetic:"
#: the period random slices of a synthetic trace come from: the Google trace's 29 days
SYNTHETIC_PERIOD_S = 29 * 86400.0
#: bounds of the automatic warm-up: as long as the window, at least an hour, at most a day
WARMUP_MIN_H, WARMUP_MAX_H = 1.0, 24.0


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


def slice_start(k: int, n: int, hours: float, seed: int, begin: float, end: float) -> float:
    """Start of the ``k``-th of ``n`` seeded random windows of ``hours`` in [begin, end]."""
    if not 0 <= k < n:
        raise ConfigError(f"slice {k} is out of range: there are {n} slices (0..{n - 1})")
    room = end - begin - hours * 3600.0
    if room < 0:
        raise ConfigError(f"the trace spans {(end - begin) / 3600:.1f} h: too short for "
                          f"{hours:g}-hour slices")
    starts = np.random.default_rng([seed, 0x511CE]).uniform(0.0, room, size=n)
    return float(begin + starts[k])


def warmup_hours(arg: str | float | None, window_h: float) -> float:
    """Hours of history a learning estimator trains on before a window of ``window_h``
    hours: ``auto`` (or None) is the window's length within [1, 24] hours (the estimator's
    groups need recent runs of the same programs, not a day of them for an hour's replay);
    a number in [0, MAX_HOURS] is taken as given (0: no warm-up); others are refused."""
    if arg is None or (isinstance(arg, str) and arg.strip().lower() == "auto"):
        return min(WARMUP_MAX_H, max(WARMUP_MIN_H, float(window_h)))
    try:
        hours = float(arg)
    except ValueError:
        hours = math.nan
    if not (math.isfinite(hours) and 0 <= hours <= MAX_HOURS):
        raise ConfigError(f"--warmup-hours takes a number of hours in [0, {MAX_HOURS:g}] or "
                          f"'auto', got {arg!r}")
    return hours


#: formats whose loader cuts a window itself (options: start, end or hours, in seconds)
LOADER_WINDOWS = {"google2011": ("window_start_s", "window_end_s", "window_hours"),
                  "alibaba-gpu2023": ("window_start_s", "window_end_s", "window_hours")}


def format_window(fmt: str):
    """For a format that cuts windows in its loader: (the format without its window
    options, (start, end) the options name in seconds; (None, None) when none is given).
    None for other formats."""
    from stratus.traces.loaders import parse_format

    name, options = parse_format(fmt)
    keys = LOADER_WINDOWS.get(name)
    if keys is None:
        return None
    k_start, k_end, k_hours = keys
    rest = [(k, v) for k, v in parse_qsl(fmt.partition("?")[2], keep_blank_values=True)
            if k not in keys]
    base = name + ("?" + urlencode(rest) if rest else "")
    if not any(options.get(k) not in (None, "") for k in keys):
        return base, (None, None)
    from stratus.traces.loaders import format_module

    opts = format_module(name).parse_options(options)  # checked: one error line if bad
    start = 0.0 if opts.start_us is None else opts.start_us / 1e6
    end = float("inf") if opts.end_us is None else opts.end_us / 1e6
    return base, (start, end)


def guess_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        return "canonical"
    if name.endswith((".swf", ".swf.gz")):
        return "swf"
    raise ConfigError(f"{path}: cannot tell the trace format from the name; pass --format")


class TraceSource:
    """Where a replay's tasks come from. A file is read once; windows are cut from it. With
    ``cache`` (traces/cache.py) a raw-format file is read from there when it holds it."""

    def __init__(self, spec: str, fmt: str | None = None, seed: int | None = None,
                 cache=None) -> None:
        self.spec = spec
        self.seed = seed
        self.cache = cache
        self.synthetic = spec.startswith(SYNTHETIC)
        if self.synthetic:
            self.name, self.params = parse_synthetic(spec)
            if seed is not None:
                self.params.setdefault("seed", str(seed))
        else:
            self.path = Path(spec)
            if not self.path.exists():
                raise TraceError(f"{spec}: no such file (a trace is a path or synthetic:NAME)")
            check_input(self.path)
            self.fmt = fmt or guess_format(self.path)
        self.fmt_window = None if self.synthetic else format_window(self.fmt)
        self._full: Trace | None = None
        self.reported = False  # whether its load report was said (stratus.app.session)

    @classmethod
    def loaded(cls, trace: Trace) -> TraceSource:
        """A trace already in memory as a source: windows are cut from it as from a file."""
        src = cls.__new__(cls)
        src.spec, src.seed, src.cache, src.synthetic = trace.name, None, None, False
        src.fmt_window = None
        src._full = trace
        return src

    def covers(self) -> tuple[float, float] | None:
        """[first submit, last end] of the trace, seconds of trace time; for a trace the
        loader's own options left empty, the span of its raw events where the loader
        records it (Google 2011: ``events_span_s``); None for a synthetic trace (any time)
        or when nothing is known."""
        if self.synthetic:
            return None
        full = self.full()
        if len(full):
            sub = full.column("submit_s")
            return float(sub.min()), float((sub + full.column("runtime_s")).max())
        span = full.meta.get("events_span_s")
        return (float(span[0]), float(span[1])) if span else None

    def full(self) -> Trace:
        """The whole file trace (synthetic: the generator's default window)."""
        if self._full is None:
            if self.synthetic:
                from stratus.traces.synthetic import generate

                self._full = generate(self.name, **self.params)
            else:
                from stratus.traces.cache import load

                self._full = load(self.path, self.fmt, self.cache)
        return self._full

    def origin(self) -> float:
        if self.synthetic:
            return float(self.params.get("start_s", 0.0))
        sub = self.full().column("submit_s")
        return float(sub.min()) if sub.size else 0.0

    def window(self, start: float | None = None, hours: float | None = None) -> Trace:
        """Synthetic: generate ``hours`` from ``start``. File: whole jobs submitted and
        finished in [start, start + hours) (Stratus §4.2); the whole file if neither given."""
        if self.synthetic:
            from stratus.traces.synthetic import generate

            params = dict(self.params)
            if hours is not None:
                params["hours"] = str(hours)
            if start is not None:
                params["start_s"] = str(start)
            return generate(self.name, **params)
        if start is None and hours is None:
            return self.full()
        s = self.origin() if start is None else float(start)
        end = s + float(hours) * 3600.0 if hours is not None else float("inf")
        if self.fmt_window is not None:
            return self.loader_window(s, end)
        return self.full().window(s, end, inside=True)

    def loader_window(self, start: float, end: float) -> Trace:
        """Jobs in [start, end) as the format's own loader cuts them (its window options):
        a window written as --start/--hours and the same window written in the format are
        one load, so one run (docs/decisions.md, "One window")."""
        base, opts = self.fmt_window
        if (start, end) == opts:
            return self.full()
        from stratus.traces.cache import load

        lo = max(0.0, start)
        query = f"window_start_s={lo!r}" + ("" if end == float("inf") else f"&window_end_s={end!r}")
        return load(self.path, base + ("&" if "?" in base else "?") + query, self.cache)

    def slice(self, k: int, n: int = 20, hours: float | None = None) -> tuple[float, float]:
        """(start, hours) of seeded random slice ``k`` of ``n``: of a file trace's span, or
        of a 29-day period for a synthetic one (the Google trace's length)."""
        hours = 24.0 if hours is None else float(hours)
        seed = 0 if self.seed is None else self.seed
        begin = self.origin()
        end = begin + (SYNTHETIC_PERIOD_S if self.synthetic else self.full().span_s)
        return slice_start(k, n, hours, seed, begin, end), hours

    def history(self, start: float | None, hours: float) -> Trace | None:
        """The jobs of the ``hours`` before a window starting at ``start``: what a learning
        estimator may train on first (Stratus §3.4). Synthetic: other jobs of the same
        programs on the preceding hours. File: jobs that ran to completion before it."""
        if hours <= 0:
            return None
        begin = self.origin() if start is None else float(start)
        if self.synthetic:
            return self.window(begin - hours * 3600.0, hours)
        if self.fmt_window is not None:
            if begin <= 0:
                return None
            hist = self.loader_window(begin - hours * 3600.0, begin)
            return hist if len(hist) else None
        hist = self.full().window(begin - hours * 3600.0, begin, inside=True)
        return hist if len(hist) else None


def load_trace(spec: str, fmt: str | None = None, hours: float | None = None,
               start: float | None = None, seed: int | None = None, cache=None) -> Trace:
    """One window of a trace spec (see TraceSource.window)."""
    return TraceSource(spec, fmt, seed, cache).window(start, hours)


def load_history(spec: str, fmt: str | None = None, start: float | None = None,
                 hours: float = 24.0, seed: int | None = None, cache=None) -> Trace | None:
    return TraceSource(spec, fmt, seed, cache).history(start, hours)
