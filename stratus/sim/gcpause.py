"""Rare cyclic garbage collection while building or replaying millions of small objects.

Tasks, jobs and estimator windows are acyclic; with the default thresholds the collector
rescans every live one again and again as they pile up (4/5 of the time of building a
day's tasks, measured). The engine's event loop does the same (Engine.run).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def rare_gc(threshold: int = 200_000):
    old = gc.get_threshold()
    gc.set_threshold(threshold, 50, 50)
    try:
        yield
    finally:
        gc.set_threshold(*old)
