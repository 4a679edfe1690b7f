"""The engine's progress bar on stderr, drawn by rich, shown only on a terminal.

``ProgressBar`` is the engine's progress hook (``ReplayConfig.progress``): the engine calls
it at every tick with (simulated time, tasks done, tasks). It draws from the hook, with no
thread of its own (rich's refresh thread would take the GIL from the event loop ten times a
second: ``auto_refresh=False``), at most every ``min_interval_s`` seconds of wall time and
no sooner than keeps drawing within ``BUDGET`` (1%) of the wall time: a draw costs ~2 ms
(rich lays out a table each time), so ten a second would cost the loop ~2-3%. A replay
over within ``DELAY_S`` gets no bar; once a bar is up, its last state is always drawn. It never redirects stdout (where the CLI prints its JSON).
``close()`` ends the bar (newline, cursor shown); the engine calls it when a replay ends,
however it ends. On a stream that is not a terminal the bar draws nothing (callers also ask
``wanted()`` first, and ``--no-progress`` makes none). What it costs the loop:
``benchmarks/bench_progress.py`` (docs/decisions.md).
"""

from __future__ import annotations

import math
import sys
import time

#: the share of wall time the bar may spend drawing (issue 20 allows the loop 2%)
BUDGET = 0.01
#: no bar before the replay has run this long (wall seconds): a bar that would show up
#: finished costs ~10 ms to set up and take down, a share of a short replay past BUDGET
DELAY_S = 0.5


class ProgressBar:
    """Callable as the engine's progress hook: (simulated time, tasks done, tasks)."""

    def __init__(self, label: str, stream=None, min_interval_s: float = 0.1) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.min_interval_s = min_interval_s
        self._last = -math.inf
        self._interval = min_interval_s  # grows to keep drawing within BUDGET
        self._progress = None  # rich's Progress, made at the first draw (rich imported then)
        self._task = None
        self._closed = False
        self._state = None  # the last call's arguments, drawn by close()
        self._first = None  # wall time of the first call: the replay's start, for "s"
        self._off = not self.wanted(self.stream)  # into a pipe or a file: nothing, ever

    @staticmethod
    def wanted(stream=None) -> bool:
        """A bar is drawn on a terminal only: never into a pipe or a file."""
        s = stream or sys.stderr
        return hasattr(s, "isatty") and s.isatty()

    def __call__(self, sim_t: float, done: int, total: int) -> None:
        if self._off:
            return
        self._state = (sim_t, done, total)
        if done >= total:
            self.close()  # draws the last state, if a bar is up
            return
        now = time.perf_counter()
        if now - self._last < self._interval or self._closed:
            return
        if self._progress is None:  # no bar for a replay over within DELAY_S
            if self._first is None:
                self._first = now
            if now - self._first < DELAY_S:
                return
        self._update()
        self._progress.refresh()
        # the next draw waits until drawing has cost at most BUDGET of the wall time
        end = time.perf_counter()
        self._interval = max(self.min_interval_s, (end - now) / BUDGET)
        self._last = end

    def _update(self) -> None:
        sim_t, done, total = self._state
        if self._progress is None:
            self._start(total)
        self._progress.update(self._task, completed=done, total=total, sim_h=sim_t / 3600.0,
                              wall_s=time.perf_counter() - self._first)

    def _start(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(  # four columns: each one costs every refresh
            TextColumn("{task.description}"), BarColumn(bar_width=30),
            TextColumn("{task.completed}/{task.total} tasks  sim {task.fields[sim_h]:7.2f} h"
                       "  {task.fields[wall_s]:6.1f} s  eta"), TimeRemainingColumn(),
            console=Console(file=self.stream), auto_refresh=False,
            redirect_stdout=False, redirect_stderr=False)
        self._task = self._progress.add_task(self.label, total=total, sim_h=0.0, wall_s=0.0)
        self._progress.start()

    def close(self) -> None:
        """End the bar where it stands (a replay that stopped early keeps its last count)."""
        if self._closed:
            return
        self._closed = True
        if self._progress is not None:
            self._update()  # the last state, which the throttle may have skipped
            self._progress.stop()  # draws it, ends the line, shows the cursor
