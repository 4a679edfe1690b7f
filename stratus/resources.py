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
NATURAL_UNITS: tuple[str, ...] = ("vCPU", "GiB")

Vec = tuple[int, ...]


def to_units(*amounts: float) -> Vec:
    """Natural units (vCPU, GiB, ...) to integer units, rounding up (tiny float noise aside)."""
    if len(amounts) != len(SCALE):
        raise ValueError(f"expected {len(SCALE)} resource amounts, got {len(amounts)}")
    return tuple(max(0, math.ceil(a * s - 1e-6)) for a, s in zip(amounts, SCALE))


def to_natural(v: Sequence[int]) -> tuple[float, ...]:
    return tuple(x / s for x, s in zip(v, SCALE))


def fits(req: Sequence[int], free: Sequence[int]) -> bool:
    # an explicit loop: about twice as fast as all() over a generator, and it is hot
    for r, f in zip(req, free):  # noqa: SIM110
        if r > f:
            return False
    return True


def add(a: Sequence[int], b: Sequence[int]) -> Vec:
    return tuple(x + y for x, y in zip(a, b))


def sub(a: Sequence[int], b: Sequence[int]) -> Vec:
    return tuple(x - y for x, y in zip(a, b))


def vsum(vs, dims: int | None = None) -> Vec:
    """Sum of vectors (zero vector of length ``dims`` when empty)."""
    acc = [0] * (dims if dims is not None else len(DIMS))
    for v in vs:
        for i, x in enumerate(v):
            acc[i] += x
    return tuple(acc)


def fractions(v: Sequence[int], cap: Sequence[int]) -> tuple[float, ...]:
    """Per-dimension share of ``cap`` that ``v`` takes."""
    return tuple(x / c for x, c in zip(v, cap))


def dominant_share(v: Sequence[int], cap: Sequence[int]) -> float:
    """The largest per-dimension share: how full ``v`` makes an instance of capacity ``cap``."""
    return max(x / c for x, c in zip(v, cap))


def constraining_dim(v: Sequence[int], cap: Sequence[int]) -> int:
    """Index of the dimension in which ``v`` takes the largest share of ``cap``."""
    best, best_share = 0, -1.0
    for i, (x, c) in enumerate(zip(v, cap)):
        s = x / c
        if s > best_share:
            best, best_share = i, s
    return best
