"""Resource vectors.

A resource vector is a tuple of non-negative integers, one per dimension of the run.
Integers (milli-vCPU, MiB, thousandths of a GPU) keep capacity accounting exact: adding
and removing the same task never drifts, so "capacity is never exceeded" is checked with
``<=``, not a tolerance. Requests are rounded *up* to the unit when converted, so a task
never gets less than it asked for. Nothing here assumes two dimensions.

A run has the dimensions ``DIMS`` (cpu, mem) unless its catalog has GPUs, in which case it
has ``GPU_DIMS`` (cpu, mem, gpu); the catalog carries them (``Catalog.dims``) and the
engine converts requests to match (docs/decisions.md, "A GPU dimension").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: every known dimension, in vector order, and its integer units per natural unit:
#: milli-vCPU per vCPU, MiB per GiB, thousandths of a GPU per GPU (so a share of a GPU, 0.47,
#: is 470 units, and shares of one instance's GPUs are pooled;
#: docs/decisions.md, "GPUs in thousandths")
ALL_DIMS: tuple[str, ...] = ("cpu", "mem", "gpu")
ALL_SCALE: tuple[int, ...] = (1000, 1024, 1000)
DIMS: tuple[str, ...] = ALL_DIMS[:2]  # the default (CPU-only) run
SCALE: tuple[int, ...] = ALL_SCALE[:2]
GPU_DIMS: tuple[str, ...] = ALL_DIMS

Vec = tuple[int, ...]


def dims_for(gpu: bool) -> tuple[str, ...]:
    """The dimensions of a run with or without GPUs."""
    return GPU_DIMS if gpu else DIMS


def to_units(*amounts: float) -> Vec:
    """Natural units (vCPU, GiB[, GPUs]) to integer units, rounding up (tiny float noise
    aside); two amounts give a (cpu, mem) vector, three a (cpu, mem, gpu) one."""
    if not 2 <= len(amounts) <= len(ALL_SCALE):
        raise ValueError(f"expected 2 to {len(ALL_SCALE)} resource amounts, got {len(amounts)}")
    return tuple(max(0, math.ceil(a * s - 1e-6)) for a, s in zip(amounts, ALL_SCALE))


def shown(vec: Sequence[int]) -> str:
    """A vector of integer units as a person reads it, in natural units: "2 vCPU, 4 GiB,
    0.47 GPU" (the GPU unit is a thousandth of a GPU, not a GPU)."""
    names = ("vCPU", "GiB", "GPU")
    return ", ".join(f"{u / s:g} {n}" for u, s, n in zip(vec, ALL_SCALE, names))


def request_units(cpu, mem_gib, gpus=None):
    """Columns of natural requests (vCPU, GiB[, GPUs]) to an (n, D) int64 array of units,
    rounded up like ``to_units``: D is 2 without ``gpus``, 3 with it."""
    import numpy as np

    amounts = (cpu, mem_gib) if gpus is None else (cpu, mem_gib, gpus)
    cols = [np.ceil(np.asarray(a, dtype=np.float64) * s - 1e-6) for a, s in zip(amounts, ALL_SCALE)]
    return np.maximum(np.stack(cols, axis=1), 0).astype(np.int64)


def fits(req: Sequence[int], free: Sequence[int]) -> bool:
    # an explicit loop: about twice as fast as all() over a generator, and it is hot
    for r, f in zip(req, free):  # noqa: SIM110
        if r > f:
            return False
    return True
