"""The simulation kernel: a clock, one heap of events and a table from event kind to
handler. Modelled on SimPy's ``Environment`` (``now``, ``schedule``, ``run``); it knows
nothing of tasks, instances or money. ``stratus.sim.engine`` registers the handlers.

An event is ``(time, kind, sequence, a, b)``. The heap orders events by time, then by
kind (the kinds' numbers are their processing order at equal times), then by the order
they were scheduled, so a run is deterministic. ``a`` and ``b`` are the handler's
arguments: ``handler(a, b, t)``.

``PyKernel`` is the reference; ``Kernel`` is the one a replay uses: the compiled kernel
(``stratus.sim.ckernel``, the heap a C array of typed records, issue 39) when it is built,
unless STRATUS_PURE_PYTHON=1 (``stratus.base.native``). Both take events in one order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from heapq import heappop, heappush
from itertools import count

from stratus.base import native
from stratus.sim.events import add_handler

Handler = Callable[[object, object, float], None]


class PyKernel:
    """Clock, event heap and handler table.

    ``on(kind, handler)`` registers the handler of a kind; kinds are small integers,
    numbered in their processing order at equal times. ``schedule(t, kind, a, b)`` adds an
    event; ``run(until)`` takes events in order and calls their handlers until the heap is
    empty, a handler calls ``stop()``, or the next event lies beyond ``until``. The clock
    (``now``) is the time of the event being handled."""

    __slots__ = ("now", "_heap", "_seq", "_handlers", "_stopped")

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self._heap: list[tuple] = []
        self._seq = count()
        self._handlers: list[Handler | None] = []
        self._stopped = False

    def on(self, kind: int, handler: Handler) -> None:
        """Register ``handler`` for events of ``kind`` (one handler per kind)."""
        add_handler(self._handlers, kind, handler)

    def schedule(self, t: float, kind: int, a=None, b=None) -> None:
        """Add an event of ``kind`` at time ``t`` with the handler's arguments ``a``, ``b``."""
        heappush(self._heap, (t, kind, next(self._seq), a, b))

    def stop(self) -> None:
        """End ``run`` after the handler that calls this returns."""
        self._stopped = True

    @property
    def stopped(self) -> bool:
        return self._stopped

    def __len__(self) -> int:
        """Events waiting on the heap."""
        return len(self._heap)

    def peek(self) -> float:
        """Time of the next event (infinity when there is none)."""
        return self._heap[0][0] if self._heap else math.inf

    def peek_except(self, kind: int) -> float:
        """Time of the next event of another kind than ``kind`` (a scan of the heap)."""
        return min((ev[0] for ev in self._heap if ev[1] != kind), default=math.inf)

    def run(self, until: float = math.inf) -> bool:
        """Handle events in order. Returns True when it stopped at ``until`` (the next
        event lies beyond it; the clock is then set to ``until``), False when the heap ran
        empty or a handler called ``stop()``."""
        heap, handlers = self._heap, self._handlers
        self._stopped = False
        while heap:
            ev = heappop(heap)
            t, kind, _, a, b = ev
            if t > until:  # stop at the limit, not at the next event (which stays queued)
                heappush(heap, ev)
                self.now = until
                return True
            self.now = t
            handlers[kind](a, b, t)
            if self._stopped:
                return False
        return False


def _compiled() -> type | None:
    """The compiled kernel, or None (stratus.base.native: asked away, not built, stale)."""
    if not native.wanted("stratus.sim.ckernel"):
        return None
    try:
        from stratus.sim.ckernel import Kernel as compiled
    except ImportError as e:  # built for another Python, say
        native.unusable("stratus.sim.ckernel", f"not loadable ({e})")
        return None
    native.loaded("stratus.sim.ckernel")
    return compiled


#: the compiled kernel when it is used, else None
COMPILED = _compiled()
#: the kernel a replay uses (module docstring)
Kernel = PyKernel if COMPILED is None else COMPILED

__all__ = ["COMPILED", "Handler", "Kernel", "PyKernel"]
