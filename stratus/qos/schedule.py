"""The schedule of paper 001 (spec A.2, A.3): an availability profile of P processors,
list scheduling in queue order, and the QoPS admission module that returns every feasible
candidate schedule (001 §4.2.1: QoPS "adapted ... to instead provide the entire list of
acceptable schedules").

A profile is two parallel lists: breakpoint times ``ts`` (``ts[0]`` = now) and the
processors free on ``[ts[i], ts[i+1])`` (``fr``); the last segment runs to infinity.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from functools import lru_cache

EPS = 1e-9  # seconds: a predicted completion within this of the deadline meets it


def base_profile(now: float, P: int, running) -> tuple[list[float], list[int]]:
    """The profile of the running jobs ``(predicted end, processors)`` from ``now`` (every
    predicted end is after now: a job whose end has come has completed)."""
    used = 0
    for _end, p in running:
        used += p
    ts, fr = [now], [P - used]
    for end, p in sorted(running):
        if end <= ts[-1]:
            fr[-1] += p
        else:
            ts.append(end)
            fr.append(fr[-1] + p)
    return ts, fr


def earliest(ts: list[float], fr: list[int], now: float, p: int, e: float) -> float:
    """The earliest time >= now at which p processors are free for e seconds."""
    n = len(ts)
    i = bisect_right(ts, now) - 1
    start = now
    while True:
        while fr[i] < p:
            i += 1
            start = ts[i]  # the last segment has every processor free: this ends
        end = start + e
        k = i + 1
        while k < n and ts[k] < end:
            if fr[k] < p:
                break
            k += 1
        else:
            return start
        i = k
        start = ts[k]


def reserve(ts: list[float], fr: list[int], start: float, e: float, p: int) -> None:
    """Take p processors over [start, start + e) (``p < 0`` gives them back)."""
    i = bisect_left(ts, start)
    if i == len(ts) or ts[i] != start:
        ts.insert(i, start)
        fr.insert(i, fr[i - 1])
    end = start + e
    j = bisect_left(ts, end, i)
    if j == len(ts) or ts[j] != end:
        ts.insert(j, end)
        fr.insert(j, fr[j - 1])
    for k in range(i, j):
        fr[k] -= p


@lru_cache(maxsize=4096)
def positions(n: int) -> tuple[int, ...]:
    """Queue positions QoPS probes (spec A.3; 001 §4.2.1 "log2(N) different positions
    {0, N/2, 3N/4, ...}"): N=8 -> 0,4,6,7,8; N=10 -> 0,5,8,9,10; N=0 -> 0."""
    out = [0]
    if n > 0:
        for k in range(1, math.ceil(math.log2(n)) + 1 if n > 1 else 1):
            out.append(n - n // 2**k)
        out.append(n)
    seen: list[int] = []
    for p in out:
        if p not in seen:
            seen.append(p)
    return tuple(seen)


def qops_candidates(now: float, ts0: list[float], fr0: list[int], queue: list[int],
                    starts: dict[int, float], new: int, K: int, procs, est, deadline,
                    first_only: bool = False) -> list[tuple[list[int], dict[int, float]]]:
    """The feasible candidate schedules for admitting ``new`` (spec A.3), in probe order:
    each is (the new queue order, the reservations of the jobs from the insertion point on;
    the jobs before it keep theirs). ``ts0, fr0`` is the running jobs' profile; it is not
    changed. K: at most K queued jobs may be promoted ahead of the new one per position."""
    out = []
    n = len(queue)
    if n == 0:  # the common case: an empty queue, one position, nothing to promote
        st = earliest(ts0, fr0, now, procs[new], est[new])
        return [([new], {new: st})] if st + est[new] <= deadline[new] + EPS else []
    pts, pfr = list(ts0), list(fr0)  # running + the fixed prefix, grown position by position
    done = 0
    for pos in positions(n):
        while done < pos:
            q = queue[done]
            reserve(pts, pfr, starts[q], est[q], procs[q])
            done += 1
        order = queue[:pos] + [new] + queue[pos:]
        moves = 0
        while True:
            ts, fr = list(pts), list(pfr)
            tail: dict[int, float] = {}
            ok = True
            violator = None
            seen_new = False
            rest = order[pos:]
            last = len(rest) - 1
            for k, j in enumerate(rest):
                st = earliest(ts, fr, now, procs[j], est[j])
                if k < last:  # the last job's reservation constrains no one
                    reserve(ts, fr, st, est[j], procs[j])
                tail[j] = st
                if st + est[j] > deadline[j] + EPS:
                    if j == new or not seen_new:
                        # the new job late, or a promoted job late (promotion cannot help
                        # it): this position is infeasible
                        ok = False
                        break
                    violator = j
                    break
                if j == new:
                    seen_new = True
            if not ok:
                break
            if violator is None:
                out.append((order, tail))
                if first_only:
                    return out
                break
            if moves == K:
                break
            # promote the violator to just before the new job
            order = [j for j in order if j != violator]
            at = order.index(new)
            order.insert(at, violator)
            moves += 1
    return out

