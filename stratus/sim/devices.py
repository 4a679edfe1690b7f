"""Whether the GPU requests on one instance can be put on its devices.

The engine pools an instance's GPUs in thousandths (``stratus.base.resources``): a set of
shares that fits the pool is placed even when no assignment to devices exists (three
0.6-GPU pods on 2 GPUs: 1800 <= 2000 thousandths, yet no GPU holds two of them). The
packers are left as they are (docs/decisions.md, "GPUs in thousandths"); this checker
measures how often a replay's placements cross that boundary
(``benchmarks/gpu_devices.py``).

A request of 1000 thousandths or more takes that many whole devices to itself (a pod of the
Alibaba GPU trace asks for whole GPUs when it asks for several); one below 1000 is a share
and sits on one device. Shares go on the devices that remain: first fit decreasing, then,
where that fails, an exact search.
"""

from __future__ import annotations

from collections.abc import Iterable

from stratus.base.resources import ALL_DIMS, ALL_SCALE

PER_GPU = ALL_SCALE[ALL_DIMS.index("gpu")]  # integer GPU units per GPU: thousandths
#: nodes the exact search may visit before it gives up (None: undecided)
BUDGET = 200_000


def _ffd(shares: list[int], bins: int) -> bool:
    free = [PER_GPU] * bins
    for s in shares:  # decreasing
        for i, f in enumerate(free):
            if s <= f:
                free[i] = f - s
                break
        else:
            return False
    return True


def _exact(shares: list[int], bins: int, budget: int) -> bool | None:
    """Depth first over the shares, largest first; each goes on a device with room, trying
    each distinct free amount once (devices with equal room are interchangeable); a branch
    ends when what is left exceeds the room left."""
    free = [PER_GPU] * bins
    rest = [0] * (len(shares) + 1)
    for i in range(len(shares) - 1, -1, -1):
        rest[i] = rest[i + 1] + shares[i]
    seen: set[tuple[int, tuple[int, ...]]] = set()  # (index, sorted free) known to fail
    nodes = 0

    def go(i: int) -> bool | None:
        nonlocal nodes
        if i == len(shares):
            return True
        if rest[i] > sum(free):
            return False
        key = (i, tuple(sorted(free)))
        if key in seen:
            return False
        nodes += 1
        if nodes > budget:
            return None
        tried = set()
        for d, f in enumerate(free):
            if shares[i] <= f and f not in tried:
                tried.add(f)
                free[d] = f - shares[i]
                ok = go(i + 1)
                free[d] = f
                if ok is None or ok:
                    return ok
        seen.add(key)
        return False

    return go(0)


def device_assignment(requests_milli: Iterable[int], n_gpus: int,
                      budget: int = BUDGET) -> bool | None:
    """Whether pods asking ``requests_milli`` thousandths of a GPU each (0: no GPU) can be
    put on ``n_gpus`` devices, whole requests on whole devices of their own and each share
    on one device; None when the exact search ran out of ``budget`` nodes."""
    whole, shares = 0, []
    for r in requests_milli:
        if r >= PER_GPU:
            # a multi-GPU request in whole GPUs; a whole-and-a-bit one is not a pod's shape:
            # it takes the GPUs it needs in part too
            whole += -(-r // PER_GPU)
        elif r > 0:
            shares.append(r)
    bins = n_gpus - whole
    if bins < 0 or sum(shares) > bins * PER_GPU:
        return False
    if not shares:
        return True
    shares.sort(reverse=True)
    if sum(1 for s in shares if 2 * s > PER_GPU) > bins:  # no two of these share a device
        return False
    if _ffd(shares, bins):
        return True
    return _exact(shares, bins, budget)
