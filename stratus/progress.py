"""A dependency-free progress bar on stderr, shown only on a terminal."""

from __future__ import annotations

import sys
import time


class ProgressBar:
    """Callable as the engine's progress hook: (simulated time, tasks done, tasks)."""

    def __init__(self, label: str, stream=None, min_interval_s: float = 0.1) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.min_interval_s = min_interval_s
        self._last = 0.0
        self._t0 = time.perf_counter()

    @staticmethod
    def wanted(stream=None) -> bool:
        s = stream or sys.stderr
        return hasattr(s, "isatty") and s.isatty()

    def __call__(self, sim_t: float, done: int, total: int) -> None:
        now = time.perf_counter()
        if done < total and now - self._last < self.min_interval_s:
            return
        self._last = now
        frac = done / total if total else 1.0
        width = 30
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total} tasks  sim {sim_t / 3600:7.2f} h"
                          f"  {now - self._t0:6.1f} s")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
