"""Resource vectors.

A resource vector is a tuple of non-negative integers, one per dimension in ``DIMS``.
Integers (milli-vCPU, MiB) keep capacity accounting exact: adding and removing the same
task never drifts, so "capacity is never exceeded" is checked with ``<=``, not a tolerance.
Requests are rounded *up* to the unit when converted, so a task never gets less than it
asked for. Nothing here assumes two dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

DIMS: tuple[str, ...] = ("cpu", "mem")
#: integer units per natural unit: milli-vCPU per vCPU, MiB per GiB
SCALE: tuple[int, ...] = (1000, 1024)

Vec = tuple[int, ...]


def to_units(*amounts: float) -> Vec:
    """Natural units (vCPU, GiB, ...) to integer units, rounding up (tiny float noise aside)."""
    if len(amounts) != len(SCALE):
        raise ValueError(f"expected {len(SCALE)} resource amounts, got {len(amounts)}")
    return tuple(max(0, math.ceil(a * s - 1e-6)) for a, s in zip(amounts, SCALE))


def request_units(cpu, mem_gib):
    """Columns of natural requests (vCPU, GiB) to an (n, D) int64 array of units, rounded
    up like ``to_units``."""
    import numpy as np

    cols = [np.ceil(np.asarray(a, dtype=np.float64) * s - 1e-6) for a, s in zip((cpu, mem_gib), SCALE)]
    return np.maximum(np.stack(cols, axis=1), 0).astype(np.int64)


def fits(req: Sequence[int], free: Sequence[int]) -> bool:
    # an explicit loop: about twice as fast as all() over a generator, and it is hot
    for r, f in zip(req, free):  # noqa: SIM110
        if r > f:
            return False
    return True
