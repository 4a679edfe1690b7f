"""SWW's and compound's forecast at the door of the replay's reserved instances
(``stratus.commitments.gate``, paper 000 §4.1): how long a task would wait if it joined the
queue now, by simulating the reserved instances forward on the runtime estimates, the
queue FCFS and work-conserving, at most ``limit`` seconds ahead (inf beyond), on the
replay's clock: room freed at an estimated end is offered to the queue at the first tick
at or after it (``on_tick``; a tick of 0: at the end itself, the pool simulator's clock).

``reference_wait`` is that simulation as written first: one whole run per task asked,
each pass testing every queued task against every instance. Tasks arrive in bursts (a
job's tasks share a submit time), and the k-th task of a burst re-simulated the k - 1
queued before it: O(k²) passes a burst (issue 35, item 6). ``Forecast`` gives the same
answers from one simulation per arrival instant:

* The task asked about is last in FCFS order, so it changes nothing before it starts: the
  simulation without it says when it starts, as the first instant (an iteration of the
  simulation) whose room after the queue's pass fits it on some instance. The simulation
  runs only as far as that, and goes on from where it stopped when asked further.
* When the task joins the queue, the record is updated in place: it starts at that
  instant on its best fit and holds the room there until its estimated end, one more
  instant if none is then. If it passed a queued task that starts later, each start in
  between is checked (``_moved``); from the first that its room changes, the record is
  dropped, to be simulated again when asked.
* A job's tasks that wait in a row form a run: a pass starts as many of a run as fit on
  its best fit at once, and looks only at the runs that fit an instance whose room grew.
* Anything else that changes reserved room (a task that starts at once) makes the record
  stale: the gate makes a new ``Forecast`` for each arrival instant, and after any start.

tests/waiting/test_gate_forecast.py holds the two equal (hypothesis) on random pools,
queues and bursts, the record equal to one built anew after every join, and a replay's
decisions and bill equal to the bit.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from heapq import heapify, heappop, heappush

import numpy as np


def on_tick(x: float, tick: float) -> float:
    """The first tick at or after ``x`` (``x`` itself for a tick of 0), as the engine
    rounds a submit time up to its tick."""
    return math.ceil(x / tick - 1e-9) * tick if tick > 0 else x


def reference_wait(gate, task, t: float, limit: float, tick: float = 0.0) -> float:
    """Seconds until ``task`` would start if it joined ``gate``'s queue at ``t``: the
    reserved instances simulated forward on the runtime estimates, room freed offered at
    the tick at or after each end (inf past ``limit``; room only: anti-affinity is left to
    the placement itself). The reference ``Forecast`` must agree with; one whole
    simulation per call."""
    book = gate.book
    est, done, start = book.est, book.done, book.run_start
    free = gate.free.copy()
    ends: list[tuple[float, int, int, tuple]] = []
    seq = 0
    for k, inst in enumerate(gate.reserved):
        for other in inst.tasks.values():
            o = other.tid
            rem = est[o] - done[o] - (t - start[o] if start[o] == start[o] else 0.0)
            heappush(ends, (on_tick(t + max(rem, 0.0), tick), seq, k, other.req))
            seq += 1
    queue = [*gate.queue.values(), task]
    now = t
    while True:
        rest = []
        for q in queue:
            k = best_index(free, q.req)
            if k < 0:
                rest.append(q)
                continue
            if q is task:
                return now - t
            free[k] -= q.req
            heappush(ends, (on_tick(now + max(est[q.tid], 0.0), tick), seq, k, q.req))
            seq += 1
        queue = rest
        if not ends or ends[0][0] - t > limit:
            return math.inf
        now = ends[0][0]
        while ends and ends[0][0] <= now:
            _, _, k, req = heappop(ends)
            free[k] += req


class ReferenceForecast:
    """``Forecast``'s interface over ``reference_wait`` (for tests and the benchmark)."""

    def __init__(self, gate, t: float, limit: float, tick: float = 0.0) -> None:
        self.gate, self.t, self.limit, self.tick = gate, t, limit, tick

    def wait(self, task) -> float:
        return reference_wait(self.gate, task, self.t, self.limit, self.tick)

    def joined(self, task) -> None:
        pass


class Forecast:
    """The gate's reserved instances and queue simulated forward from ``t`` to ``t +
    limit``, once, then kept up to date as the instant's tasks join the queue (module
    docstring). ``wait(task)`` equals ``reference_wait(gate, task, t, limit)``; after a
    finite answer the gate either queues the task and says so (``joined``) or drops this
    forecast. Valid while the gate changes nothing else (one arrival instant). ``tick``:
    the replay's (``on_tick``); an end below is the tick its room is offered at."""

    def __init__(self, gate, t: float, limit: float, tick: float = 0.0) -> None:
        self.gate, self.t, self.limit, self.tick = gate, t, limit, tick
        est, done, start = gate.book.est, gate.book.done, gate.book.run_start
        # what runs on the reserved instances now: its estimated end, row and request
        self.ends: list[tuple[float, int, tuple]] = []
        for k, inst in enumerate(gate.reserved):
            for other in inst.tasks.values():
                o = other.tid
                rem = est[o] - done[o] - (t - start[o] if start[o] == start[o] else 0.0)
                self.ends.append((on_tick(t + max(rem, 0.0), tick), k, other.req))
        # the queue in FCFS order (the tasks that join are appended), and as runs of
        # tasks in a row that ask the same (a job's tasks): a run's tasks start in order,
        # so those of a run still waiting are its last ones
        self.queue = list(gate.queue.values())
        self.n = n = len(self.queue)
        reqs = [q.req for q in self.queue]
        self.runs: list[tuple[tuple, list[int]]] = []  # (request, its tasks)
        run_of, run_pos = [], []
        for x, req in enumerate(reqs):
            if not self.runs or self.runs[-1][0] != req:
                self.runs.append((req, []))
            run_pos.append(len(self.runs[-1][1]))
            run_of.append(len(self.runs) - 1)
            self.runs[-1][1].append(x)
        # per queued task (the first n rows): its run and place there, its request and
        # estimated runtime (>= 0), the instant (iteration) it starts at (_LATER: not
        # within the limit), its end, its instance and that one's free cores just before
        size, dims = max(16, 2 * n), gate.free.shape[1]
        self.run_of = np.zeros(size, dtype=np.int64)
        self.run_pos = np.zeros(size, dtype=np.int64)
        self.need = np.zeros((size, dims), dtype=gate.free.dtype)
        self.dur = [max(est[q.tid], 0.0) for q in self.queue]
        if n:
            self.run_of[:n], self.run_pos[:n] = run_of, run_pos
            self.need[:n] = reqs
        self.start = np.full(size, _LATER, dtype=np.int64)
        self.end = np.zeros(size)
        self.row = np.zeros(size, dtype=np.int64)
        self.cores = np.zeros(size, dtype=gate.free.dtype)
        # per instant: its time, every instance's free room before and after the queue's
        # pass there, and how many queued tasks still wait after it. Instants before
        # ``valid`` are known; the one after them, if any, is where the simulation goes
        # on from when asked past them (its time and room before its pass are known, its
        # state is ``live`` or rebuilt from the record). At first: instant 0, now.
        self.at: list[float] = [t]
        self.before = gate.free[None].copy()
        self.after = self.before.copy()
        self.waiting = np.zeros(1, dtype=np.int64)
        self.valid = 0
        self.live: list | None = None
        self.asked: tuple[object, int] | None = None  # the last task asked, its instant

    def wait(self, task) -> float:
        """Seconds until ``task`` would start if it joined the queue now (inf: not within
        the limit): the first instant whose room after the queue's pass fits it."""
        req = task.req
        i = self._first_fit(req, 0, self.valid)
        if i < 0 and self.valid < len(self.at):  # not in what is known: simulate on
            v = self.valid
            self._simulate(v, req)
            i = self._first_fit(req, v, self.valid)
        if i < 0:
            self.asked = None
            return math.inf
        self.asked = (task, i)
        return self.at[i] - self.t

    def _first_fit(self, req, lo: int, hi: int) -> int:
        """The first instant in [lo, hi) whose room after its pass fits ``req``, or -1."""
        room = self.after[lo:hi]
        ok = room[:, :, 0] >= req[0]
        for d in range(1, len(req)):
            ok &= room[:, :, d] >= req[d]
        hit = ok.any(axis=1)
        i = int(hit.argmax()) if len(hit) else 0
        return lo + i if len(hit) and hit[i] else -1

    def joined(self, task) -> None:
        """``task``, just asked about with a finite answer, joined the queue (last). It
        starts at that instant i on the best fit k, holds k's room until the first instant
        at or after its end (one more instant if none is then), and changes nothing else
        unless it passed a queued task whose start it moves (``_moved``, at instant p):
        then what follows p is forgotten, to be simulated again when asked about."""
        asked, i = self.asked
        if asked is not task:
            raise AssertionError("Forecast.joined: not the task last asked about")
        self.asked = None
        req = task.req
        at, v = self.at, self.valid
        k = best_index(self.after[i], req)
        x = self._append(task)
        end = on_tick(at[i] + self.dur[x], self.tick)
        e = bisect_left(at, end, i + 1, v)  # its end's instant if known (v: not yet)
        moved = self._moved(i, e, k, req) if self.waiting[i] else None
        n = self.n
        start, row, cores = self.start[:n], self.row[:n], self.cores[:n]
        # the tasks it shares k with until then find that much less there
        hold = e if moved is None else moved
        cores[(row == k) & (start > i) & (start < hold)] -= req[0]
        start[x], self.end[x], row[x], cores[x] = i, end, k, self.after[i, k, 0]
        self.waiting[:i] += 1
        self.after[i:hold, k] -= req
        self.before[i + 1:hold, k] -= req
        if moved is not None:
            self.before[moved, k] -= req  # it still holds k when instant p's pass begins
            self._forget(moved)
            return
        live = self.live
        if live is not None:  # it and its run's earlier tasks have started by then
            r, first = int(self.run_of[x]), live[2]
            first[r:] = [int(self.run_pos[x]) + 1]
        if e < len(at) and at[e] == end:
            return  # its end is an instant already
        if e == v < len(at) and end > at[v]:
            # the instant to simulate next begins with it on k
            self.before[v, k] -= req
            if live is not None:
                live[0][k] = [a - q for a, q in zip(live[0][k], req)]
                heappush(live[1], (end, live[7], k, req))
                live[7] += 1
            return
        if e < len(at) or end - self.t <= self.limit:
            # a new instant at its end, with the room it gave back: as after the instant
            # before, where no queued task fits, so none starts
            back = self.after[e - 1].copy()
            back[k] += req
            at.insert(e, end)
            self.after = np.insert(self.after, e, back, axis=0)
            self.before = np.insert(self.before, e, back, axis=0)
            self.waiting = np.insert(self.waiting, e, self.waiting[e - 1])
            start[(start >= e) & (start != _LATER)] += 1
            self.valid += 1

    def _append(self, task) -> int:
        """``task`` joins the queue (not started), and its last run if it asks the same."""
        x = self.n
        if x == len(self.start):  # room for twice as many
            size = max(16, 2 * x)
            self.need = np.resize(self.need, (size, self.need.shape[1]))
            for name in ("start", "end", "row", "cores", "run_of", "run_pos"):
                setattr(self, name, np.resize(getattr(self, name), size))
        self.n += 1
        self.queue.append(task)
        req = task.req
        if not self.runs or self.runs[-1][0] != req:
            self.runs.append((req, []))
        self.run_pos[x] = len(self.runs[-1][1])
        self.runs[-1][1].append(x)
        self.run_of[x] = len(self.runs) - 1
        self.need[x] = req
        self.dur.append(max(self.gate.book.est[task.tid], 0.0))
        self.start[x] = _LATER
        return x

    def _forget(self, p: int) -> None:
        """Keep instants before ``p`` and the state before instant p's pass (its time and
        room before); the queued tasks that started at p or later are to start again."""
        del self.at[p + 1:]
        self.before, self.after = self.before[:p + 1], self.after[:p + 1]
        self.waiting = self.waiting[:p + 1]
        start = self.start[:self.n]
        start[start >= p] = _LATER
        self.valid = p
        self.live = None

    def _moved(self, i: int, e: int, k: int, req) -> int | None:
        """The first instant in (i, e) at which a queued task holding ``req`` on instance
        ``k`` from instant i would change a start the simulation made, or None. A start
        there changes only if k is involved: the task chose k and no longer fits it, or
        chose another and k, fitting, now has the fewest free cores (best fit's order is
        (free cores, row)). One that did not start fits no less room now, and still not."""
        n = self.n - 1  # not the task itself
        start = self.start[:n]
        idx = np.flatnonzero((start > i) & (start < e))
        if not len(idx):
            return None
        idx = idx[np.argsort(start[idx], kind="stable")]  # by instant, then FCFS
        p, r, need, cores = start[idx], self.row[idx], self.need[idx], self.cores[idx]
        # k's free room at each one's turn: before its instant's pass, less what those
        # before it in the pass took there
        on_k = np.where((r == k)[:, None], need, 0)
        took = np.cumsum(on_k, axis=0) - on_k
        first = np.searchsorted(p, p)  # where each one's instant begins
        took -= took[first]  # from its instant's start
        less = self.before[p, k] - took - np.array(req, dtype=need.dtype)
        fits = (less >= need).all(axis=1)
        changed = np.where(r == k, ~fits, fits & ((less[:, 0] < cores)
                                                 | ((less[:, 0] == cores) & (k < r))))
        hit = np.flatnonzero(changed)
        return int(p[hit[0]]) if len(hit) else None

    def _simulate(self, p: int, until=None) -> None:
        """``reference_wait``'s simulation without a task asked about, from instant ``p``
        on, recording each instant, until one whose room after its pass fits ``until``
        (None: to the end); the next instant, if any, is then pending: its time and room
        before its pass are known, and the simulation's state there is kept to go on
        from when asked past it. A pass looks only at the runs whose request fits an
        instance whose room grew since the last pass (no other can: room elsewhere only
        shrank), in FCFS order: each starts its tasks in turn on their best fit among
        those instances until one does not fit (nor then do the rest of the run). Ends
        at one time on one instance are one event (they free room together anyway).
        The room is kept as lists; each change is logged, and the rooms before and after
        each pass are made from the log at the end, at once."""
        t, limit, tick = self.t, self.limit, self.tick
        runs, dur = self.runs, self.dur
        live = self.live if p == self.valid else None
        self.live = None
        if live is None:
            live = self._state(p)
        free, ends, first, open_, ask, grew, n_wait, seq = live
        low = ask.min(axis=0).tolist() if open_ else None  # the least any waiting run asks
        base = self.before[p]  # the room before instant p's pass, as an array
        now = self.at[p]
        at, waiting = self.at[:p], []
        log: list[tuple[int, int, list]] = []  # (2 x instant (+1: its pass), row, change)
        one: list[tuple] = []  # the tasks that start alone: (task, instant, end, row, cores)
        many: list[tuple] = []  # (tasks, instant, their ends, row, cores of the first, cpu)

        def put(tasks, f: int, c: int, k: int, have: list, req: tuple) -> None:
            """Tasks f..f+c-1 of a run start now on row k, which had ``have`` free."""
            nonlocal seq
            if c == 1:
                x = tasks[f]
                fin = on_tick(now + dur[x], tick)
                one.append((x, i, fin, k, have[0]))
                heappush(ends, (fin, seq, k, req))
                seq += 1
                return
            xs = tasks[f:f + c]
            fins = [on_tick(now + dur[x], tick) for x in xs]
            many.append((xs, i, fins, k, have[0], req[0]))
            for fin, m in sorted(Counter(fins).items()):
                heappush(ends, (fin, seq, k, tuple(m * q for q in req)))
                seq += 1

        def take(tasks, f: int, k: int, req: tuple) -> tuple[int, list]:
            """As many of a run's tasks from f on as fit on row k start there, logged:
            (how many, the row's room after)."""
            have = free[k]
            c = len(tasks) - f
            for a, q in zip(have, req):
                if q > 0:
                    c = min(c, a // q)
            put(tasks, f, c, k, have, req)
            took = [-c * q for q in req]
            log.append((slot, k, took))
            free[k] = after = [a + q for a, q in zip(have, took)]
            return c, after

        while True:
            i = len(at)
            slot = 2 * (i - p) + 1
            if open_ and len(grew) == 1:  # one row grew (the most common): in Python
                k = grew[0]
                have = free[k]
                went = []
                if all(a >= q for a, q in zip(have, low)):
                    rest = np.flatnonzero((ask <= have).all(axis=1))
                else:
                    rest = ()
                while len(rest):
                    r = open_[rest[0]]
                    req, tasks = runs[r]
                    f = first[r]
                    c, have = take(tasks, f, k, req)
                    n_wait -= c
                    first[r] = f + c
                    went.append(r)
                    rest = rest[1:]
                    if len(rest) and all(a >= q for a, q in zip(have, low)):
                        rest = rest[(ask[rest] <= have).all(axis=1)]  # what still fits
                    else:
                        rest = rest[:0]
            elif open_:
                room = np.array([free[g] for g in grew], dtype=base.dtype)
                fit = (ask[:, None, :] <= room[None, :, :]).all(axis=2)
                hits = np.flatnonzero(fit.any(axis=1))
                fit, need = fit[hits], ask[hits]  # kept exact as room is taken
                went = []
                j = 0
                while j < len(hits):
                    r = open_[hits[j]]
                    req, tasks = runs[r]
                    f = first[r]
                    while f < len(tasks) and fit[j].any():
                        # its best fit among the grown rows (no other fits), then as many
                        # of the run as fit there: that one only gets fewer free cores,
                        # so it stays the best
                        cols = np.flatnonzero(fit[j])
                        g = int(cols[room[cols, 0].argmin()])
                        c, room[g] = take(tasks, f, grew[g], req)
                        f += c
                        fit[j:, g] = (need[j:] <= room[g]).all(axis=1)
                    if f > first[r]:  # the rest that no longer fit anywhere: dropped
                        n_wait -= f - first[r]
                        first[r] = f
                        went.append(r)
                        keep = fit.any(axis=1)
                        keep[:j + 1] = True
                        if not keep.all():
                            hits, fit, need = hits[keep], fit[keep], need[keep]
                    j += 1
            else:
                went = []
            done = {r for r in went if first[r] == len(runs[r][1])}
            if done:
                keep = np.array([r not in done for r in open_])
                open_ = [r for r in open_ if r not in done]
                ask = ask[keep]
                low = ask.min(axis=0).tolist() if open_ else None
            at.append(now)
            waiting.append(n_wait)
            valid = len(at)
            if not ends or ends[0][0] - t > limit:
                break
            # (it fit no room before this pass: it can fit only where room grew)
            found = until is not None and any(
                all(a >= q for a, q in zip(free[g], until)) for g in grew)
            now = ends[0][0]
            rows: dict[int, list] = {}
            while ends and ends[0][0] <= now:
                _, _, k, req = heappop(ends)
                rows[k] = [a + q for a, q in zip(rows[k], req)] if k in rows else req
            for k, back in rows.items():
                free[k] = [a + q for a, q in zip(free[k], back)]
                log.append((slot + 1, k, back))
            grew = sorted(rows)
            if found:  # the next instant is pending: keep the state to go on from it
                at.append(now)
                waiting.append(n_wait)
                self.live = [free, ends, first, open_, ask, grew, n_wait, seq]
                break
        # the rooms before and after each pass: the room at p plus the changes so far
        m = len(at) - p
        steps = np.zeros((2 * m, *base.shape), dtype=base.dtype)
        if log:
            slots, ks, vals = zip(*log)
            np.add.at(steps, (np.array(slots), np.array(ks)), np.array(vals, dtype=base.dtype))
        rooms = base + np.cumsum(steps, axis=0)
        self.at = at
        self.before = np.concatenate([self.before[:p], rooms[0::2]])
        self.after = np.concatenate([self.after[:p], rooms[1::2]])
        self.waiting = np.concatenate([self.waiting[:p], np.array(waiting, dtype=np.int64)])
        self.valid = valid
        n = self.n
        start, end, row, cores = self.start[:n], self.end[:n], self.row[:n], self.cores[:n]
        if one:
            xs, ins, fins, ks, cs = zip(*one)
            xs = list(xs)
            start[xs], end[xs], row[xs], cores[xs] = ins, fins, ks, cs
        for xs, i0, fins, k, c0, cpu in many:
            start[xs], end[xs], row[xs] = i0, fins, k
            cores[xs] = c0 - cpu * np.arange(len(xs))

    def _state(self, p: int) -> list:
        """The simulation's state before instant p's pass, from what is recorded: the
        room then, every end after it (of what ran at t, and of the queued tasks that
        started before p, by (end, instance)), per run its first task not started, the
        runs with tasks waiting and their requests, the rows to look at (all), how many
        wait, the next sequence number of the ends."""
        n, now = self.n, self.at[p]
        start, end, row = self.start[:n], self.end[:n], self.row[:n]
        free = self.before[p].tolist()
        ends = [(e, s, k, req) for s, (e, k, req) in enumerate(self.ends) if e > now or p == 0]
        held = np.flatnonzero((start < p) & (end > now))
        if len(held):
            keys, inv = np.unique(np.stack([end[held], row[held]]), axis=1,
                                  return_inverse=True)
            sums = np.zeros((keys.shape[1], self.need.shape[1]), dtype=self.need.dtype)
            np.add.at(sums, inv.ravel(), self.need[held])
            for (fin, k), tot in zip(keys.T.tolist(), sums.tolist()):
                ends.append((fin, len(ends), int(k), tuple(tot)))
        heapify(ends)  # (end, seq) are distinct: the same order as one push at a time
        later = np.flatnonzero(start >= p)
        start[later] = _LATER
        first = np.array([len(tasks) for _, tasks in self.runs], dtype=np.int64)
        np.minimum.at(first, self.run_of[later], self.run_pos[later])
        first = first.tolist()
        open_ = [r for r, (_, tasks) in enumerate(self.runs) if first[r] < len(tasks)]
        ask = np.array([self.runs[r][0] for r in open_], dtype=self.need.dtype).reshape(
            len(open_), self.need.shape[1])
        return [free, ends, first, open_, ask, list(range(len(free))), len(later), len(ends)]


_LATER = np.iinfo(np.int64).max  # a queued task's start instant: not within the limit


def best_index(free: np.ndarray, req, skip=()) -> int:
    """Of the rows of free room ``free``, the index of the one with the fewest free cores
    that ``req`` fits (the first of equals), none of the rows in ``skip``; or -1."""
    ok = free[:, 0] >= req[0]
    for d in range(1, len(req)):  # column by column: faster than .all(axis=1) on few
        ok &= free[:, d] >= req[d]
    if len(skip):
        ok[list(skip)] = False
    k = int(np.where(ok, free[:, 0], _NONE).argmin())
    return k if ok[k] else -1


_NONE = np.iinfo(np.int64).max  # above any free room: a row that does not fit


__all__ = ["Forecast", "ReferenceForecast", "best_index", "on_tick", "reference_wait"]
