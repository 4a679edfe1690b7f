"""One command's trace window, its warm-up history and its fit to a catalog, loaded once."""

from __future__ import annotations

import sys

from stratus.app.spec import WindowSpec


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
