"""One command's trace window, its warm-up history and its fit to a catalog, loaded once."""

from __future__ import annotations

import sys

from stratus.app.spec import WindowSpec
from stratus.base.errors import ConfigError

#: a Google 2011 window given as format options (traces/google2011.py)
FORMAT_WINDOW = ("window_start_s", "window_hours", "window_end_s")


class Session:
    """The window ``spec`` names (``--start``/``--hours`` or seeded slice K of N), cut from
    ``source`` when given (a file is read once however many slices are cut from it).

    What the loader left out is said once per load of the file, however many windows are
    cut from it, and what fitting a window to a catalog drops once per window: on stderr,
    or with ``quiet`` into ``messages`` (a sweep's worker: the sweep says each once)."""

    def __init__(self, spec: WindowSpec, source=None, slice_: int | None = None,
                 quiet: bool = False) -> None:
        from stratus.traces.spec import TraceSource

        self.spec = spec
        self.quiet = quiet
        self.messages: list[str] = []
        self.source = source or TraceSource(spec.trace, spec.format, spec.seed,
                                            spec.trace_cache())
        k = spec.slice if slice_ is None else slice_
        written = format_written(self.source)
        if written is not None and (k is not None or spec.start is not None
                                    or spec.hours is not None):
            raise ConfigError(f"{spec.format}: the format's window options and "
                              f"{'--slice' if k is not None else '--start/--hours'} both name "
                              f"the window; give it one way")
        if k is not None:
            self.start, self.hours = self.source.slice(k, spec.slices or 20, spec.hours)
        elif written is not None:  # the same window as --start/--hours, warm-up included
            self.start, self.hours = written
        else:
            self.start, self.hours = spec.start, spec.hours
        self.trace = self.source.window(self.start, self.hours)
        # (a format-written window is named in messages as it was written)
        self.cut = (None, None) if written is not None else (self.start, self.hours)
        check_window(self.trace, self.source, *self.cut,
                     None if k is None else (k, spec.slices or 20))
        self._history = None
        self._history_loaded = False
        if not self.source.reported:  # once per load, not once per window
            self.source.reported = True
            self._say(report_lines(self.trace))

    def _say(self, lines: list[str]) -> None:
        if not lines:
            return
        if self.quiet:
            self.messages.append("\n".join(lines))
        else:
            for line in lines:
                print(line, file=sys.stderr)

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
        start, hours = self.cut
        where = "" if start is None and hours is None else (
            f" (window from {start or 0:,.0f} s"
            + (f", {hours:g} h)" if hours is not None else ")"))
        self._say(fit_lines(self.trace, trace, where))
        return trace


def format_written(source) -> tuple[float, float | None] | None:
    """(start, hours) of a window written in the format's options (``google2011?
    window_start_s=...``), None when the format names none: the window a replay takes
    as if given by --start/--hours, so that its estimator warms up the same."""
    fw = getattr(source, "fmt_window", None)
    if fw is None or fw[1] == (None, None):
        return None
    start, end = fw[1]
    return start, (None if end == float("inf") else (end - start) / 3600.0)


def check_window(trace, source, start: float | None, hours: float | None,
                 slice_: tuple[int, int] | None = None) -> None:
    """A window with no task is refused, before any replay: a bill of $0.00 for nothing
    would pass for a result. One line names the window and the span the trace covers."""
    if len(trace):
        return
    cut = start is not None or hours is not None or slice_ is not None
    if not cut:
        for line in report_lines(trace):  # what the loader dropped says why nothing is left
            print(line, file=sys.stderr)
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


def report_lines(trace) -> list[str]:
    """The loader's report as lines when it dropped rows or has notes, else none."""
    rep = trace.meta.get("load_report")
    if not (rep and (rep.get("dropped") or rep.get("notes"))):
        return []
    from stratus.traces.schema import LoadReport

    return LoadReport.from_dict(rep, trace.name).lines()


def fit_lines(before, after, where: str = "") -> list[str]:
    """What fitting ``before`` to a catalog (``after``) dropped, a line per reason: only
    what the fit added to the load report, which was said already."""
    if after is before:
        return []
    old = (before.meta.get("load_report") or {}).get("dropped", {})
    new = (after.meta.get("load_report") or {}).get("dropped", {})
    return [f"{after.name}{where}: dropped {n - old.get(why, 0):,}: {why}"
            for why, n in new.items() if n != old.get(why, 0)]


def sessions(spec: WindowSpec, plan: list[int | None]):
    """One session per planned slice, all cut from one trace source."""
    source = None
    for k in plan:
        sess = Session(spec, source, k)
        source = sess.source
        yield k, sess


class Origin:
    """Where a window that ``stratus.load_trace`` returned came from, so that a replay of it
    warms its estimator up on the history the CLI would (``Trace.origin``): the window spec,
    the window's start and length. The history is cut on first use (the trace reloaded
    through the trace cache) and kept per warm-up length; a pickled copy (a worker's) keeps
    only the way back, not the histories."""

    def __init__(self, sess: Session) -> None:
        self.spec = sess.spec
        self.start = sess.start
        self.window_h = sess.window_hours()
        self._histories: dict[float, object] = {}

    def warmup_hours(self, arg) -> float:
        """The warm-up a replay with ``--warmup-hours arg`` takes before this window."""
        from stratus.traces.spec import warmup_hours

        return warmup_hours(arg, self.window_h)

    def history(self, hours: float):
        """The ``hours`` of jobs before the window (None: none), as Session.history."""
        if hours <= 0:
            return None
        if hours not in self._histories:
            from stratus.traces.spec import TraceSource

            s = self.spec
            source = TraceSource(s.trace, s.format, s.seed, s.trace_cache())
            self._histories[hours] = source.history(self.start, hours)
        return self._histories[hours]

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_histories": {}}
