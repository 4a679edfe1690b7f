"""One command's trace window, its warm-up history and its fit to a catalog, loaded once."""

from __future__ import annotations

import sys

from stratus.app.spec import WindowSpec
from stratus.base.errors import ConfigError

#: a Google 2011 window given as format options (traces/google2011.py)
FORMAT_WINDOW = ("window_start_s", "window_hours", "window_end_s")


class Session:
    """The window ``spec`` names (``--start``/``--hours`` or seeded slice K of N), cut from
    ``source`` when given (a file is read once however many slices are cut from it)."""

    def __init__(self, spec: WindowSpec, source=None, slice_: int | None = None) -> None:
        from stratus.traces.spec import TraceSource

        self.spec = spec
        self.source = source or TraceSource(spec.trace, spec.format, spec.seed,
                                            spec.trace_cache())
        k = spec.slice if slice_ is None else slice_
        if k is not None:
            self.start, self.hours = self.source.slice(k, spec.slices or 20, spec.hours)
        else:
            self.start, self.hours = spec.start, spec.hours
        self.trace = self.source.window(self.start, self.hours)
        check_window(self.trace, self.source, self.start, self.hours,
                     None if k is None else (k, spec.slices or 20))
        self._history = None
        self._history_loaded = False
        report_load(self.trace)

    def window_hours(self) -> float:
        """The window's length: --hours, a synthetic spec's hours, else the trace's span."""
        if self.hours is not None:
            return float(self.hours)
        params = self.trace.meta.get("params") or {}
        if "hours" in params:
            return float(params["hours"])
        return self.trace.span_s / 3600.0

    def warmup_hours(self) -> float:
        from stratus.traces.spec import warmup_hours

        return warmup_hours(getattr_warmup(self.spec), self.window_hours())

    def history(self):
        """The warm-up history (--warmup-hours before the window), loaded on first use."""
        if not self._history_loaded:
            hours = self.warmup_hours()
            self._history = self.source.history(self.start, hours) if hours > 0 else None
            self._history_loaded = True
        return self._history

    def fitted(self, catalog: str, drop_oversized: bool):
        """The window checked against ``catalog``: a task larger than every type is an
        error, or its job is dropped (reported) with ``drop_oversized``."""
        from stratus.pricing.catalog_files import get_catalog
        from stratus.traces.schema import fit_to_catalog

        trace = fit_to_catalog(self.trace, get_catalog(catalog), drop_oversized)
        if trace is not self.trace:
            report_load(trace)
        return trace


def check_window(trace, source, start: float | None, hours: float | None,
                 slice_: tuple[int, int] | None = None) -> None:
    """A window with no task is refused, before any replay: a bill of $0.00 for nothing
    would pass for a result. One line names the window and the span the trace covers."""
    if len(trace):
        return
    cut = start is not None or hours is not None or slice_ is not None
    if not cut:
        report_load(trace)  # what the loader dropped says why nothing is left
    verb = "drew no job" if source.synthetic else "holds no whole job" if cut else "holds no job"
    raise ConfigError(f"{source.spec}: {_window_text(source, trace, start, hours, slice_)} "
                      f"{verb}; {_covers_text(source)}")


def _t(x: float) -> str:
    return f"{x:.10g}"


def _window_text(source, trace, start, hours, slice_) -> str:
    if start is None and hours is None:
        opts = trace.meta.get("options") or {}
        given = [f"{k}={opts[k]}" for k in FORMAT_WINDOW if opts.get(k) not in (None, "")]
        if given:
            return f"the {trace.meta.get('format', 'format')} window {' '.join(given)}"
        return "the trace"
    lo = float(start) if start is not None else source.origin()
    hi = lo + float(hours) * 3600.0 if hours is not None else float("inf")
    named = f"start {_t(lo)} s" + ("" if hours is None else f", {_t(float(hours))} h")
    where = f"[{_t(lo)}, {_t(hi)}) s of trace time"
    if slice_ is not None:
        return f"slice {slice_[0]} of {slice_[1]} ({named}: {where})"
    return f"the window {named} ({where})"


def _covers_text(source) -> str:
    if source.synthetic:
        return "a synthetic trace has jobs at any time: give a longer --hours or a larger scale"
    span = source.covers()
    if span is None:
        return "the trace holds no task (the load report above says what was dropped)"
    lo, hi = span
    return f"the trace covers [{_t(lo)}, {_t(hi)}] s of trace time ({(hi - lo) / 3600:.4g} h)"


def loaded_window(trace, spec: WindowSpec):
    """A trace given in memory (the Python API) cut to ``spec``'s --start/--hours as a
    file's window is, and refused when empty; a slice is cut from a trace spec only."""
    from stratus.traces.spec import TraceSource

    if spec.slice is not None:
        raise ConfigError("slices are cut from a trace spec; a loaded trace is one window")
    source = TraceSource.loaded(trace)
    out = source.window(spec.start, spec.hours)
    check_window(out, source, spec.start, spec.hours)
    return out


def window_trace(spec: WindowSpec, trace=None):
    """The window ``spec`` names, of ``trace`` when it is a loaded trace (else the spec's)."""
    trace = spec.trace if trace is None else trace
    return Session(spec).trace if isinstance(trace, str) else loaded_window(trace, spec)


def getattr_warmup(spec) -> str:
    """A spec's --warmup-hours; a command without one (waiting's smallest-vm) has none."""
    return spec.warmup_hours if hasattr(spec, "warmup_hours") else "auto"


def report_load(trace) -> None:
    """The loader's report on stderr when it dropped rows or has notes."""
    rep = trace.meta.get("load_report")
    if rep and (rep.get("dropped") or rep.get("notes")):
        from stratus.traces.schema import LoadReport

        for line in LoadReport.from_dict(rep, trace.name).lines():
            print(line, file=sys.stderr)


def sessions(spec: WindowSpec, plan: list[int | None]):
    """One session per planned slice, all cut from one trace source."""
    source = None
    for k in plan:
        sess = Session(spec, source, k)
        source = sess.source
        yield k, sess
