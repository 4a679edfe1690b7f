"""The waiting pool's general path as it was before it became a class (issue 37 item 5):
``_general`` of stratus/waiting/pool.py at commit e590966, verbatim but for its name
(``general``); the ``_Fifo`` and ``_head`` it used are the pool's own. The reference that
``stratus.waiting.pool._EventPool`` is tested against (tests/waiting/test_pool_rule.py);
used only by tests, not maintained: fix the pool, not this."""

from __future__ import annotations

import heapq
import math

import numpy as np

# the pool's own queue and constants: unchanged since, shared so that the two differ only
# in the event loop under test
from stratus.waiting.pool import _EPS, _FEW, _WIDE, PoolRun, _Fifo, _head


def general(spec, policy, submit, runtime, cpu, mem, fits, short, over, under, key,
            predictor=None, observe=None, short_first=False, timer=False,
            revocation=None) -> PoolRun:
    """Event by event: several jobs per server, either placement, either order."""
    n = len(submit)
    cloud = np.zeros(n, dtype=bool)
    start = np.full(n, np.nan)
    wait = np.zeros(n)
    server = np.full(n, -1, dtype=np.int64)
    shapes = spec.server_shapes()  # each server's room starts at its own shape
    free_c = [c for c, _ in shapes]
    free_m = [m for _, m in shapes]
    # a wide pool mirrors its free cores, and both rooms plus _EPS (the same floats the
    # loop compares), in arrays for ``place`` (749 servers on the real window)
    wide = spec.servers >= _WIDE
    room_c = np.array(free_c)
    room_ce = room_c + _EPS
    room_me = np.array(free_m) + _EPS
    num_cores = spec.total_cores()
    name, b = policy.name, policy.b
    best = spec.placement == "best-fit"
    wc = spec.work_conserving
    sjf = spec.order == "sjf"
    # (time, kind, job, server): 0 finish, 1 leave for the cloud, 2 re-queue (ljw-spec),
    # 3 restart (ljw-spec on spot: a revoked speculation)
    events: list[tuple[float, int, int, int]] = []
    killed = np.zeros(n, dtype=bool)
    runs: list[tuple[int, float, float, str]] = []
    queue: list = []  # SJF: heap of (key, job) (lazy deletion)
    fifo = None if sjf else _Fifo()  # FCFS: the queued jobs' rows, in order
    waiting: set[int] = set()
    rt = runtime.tolist()
    cp = cpu.tolist()
    mm = mem.tolist()
    ky = key.tolist()

    def fit(c: float, m: float, fc: list[float], fm: list[float]) -> int:
        """The server (of free cores ``fc``, GiB ``fm``) a job of c cores, m GiB goes to:
        the first that fits, or the one with the fewest free cores that fits; -1: none."""
        chosen = -1
        room = math.inf
        for k in range(len(fc)):
            f = fc[k]
            if f + _EPS >= c and fm[k] + _EPS >= m:
                if not best:
                    return k
                if f < room:
                    room, chosen = f, k
        return chosen

    def place(j: int) -> int:
        """``fit`` on the pool's free room now."""
        if not wide:
            return fit(cp[j], mm[j], free_c, free_m)
        ok = (room_ce >= cp[j]) & (room_me >= mm[j])
        k = int(np.where(ok, room_c, math.inf).argmin() if best else ok.argmax())
        return k if ok[k] else -1

    def moved(k: int) -> None:
        """Server k's room changed: its mirror too."""
        if wide:
            room_c[k] = free_c[k]
            room_ce[k] = free_c[k] + _EPS
            room_me[k] = free_m[k] + _EPS

    def one_pass(q: list[int], fc: list[float], fm: list[float], start,
                 floor: tuple[float, float] = (0.0, 0.0)) -> list[int]:
        """Start queued jobs ``q`` in order on servers ``fc``/``fm``: the head only, or
        (work-conserving) every one that fits. ``start(j, k)`` takes the room and returns
        True to end the pass there. Returns the jobs left, in order. Capacity only shrinks
        during a pass, so the largest room stays an upper bound: a job larger than it, or
        at least as large as one that failed, fails without a scan; once not even
        ``floor`` (the smallest queued cores and GiB) has room, the rest stay."""
        rest: list[int] = []
        fails: list[tuple[float, float]] = []
        top_c = max(fc, default=0.0) + _EPS
        top_m = max(fm, default=0.0) + _EPS
        for i, j in enumerate(q):
            if floor[0] > top_c or floor[1] > top_m:
                rest.extend(q[i:])
                break
            c, m = cp[j], mm[j]
            k = -1
            if c <= top_c and m <= top_m and not any(c >= a and m >= z for a, z in fails):
                k = fit(c, m, fc, fm)
            if k < 0:
                if not wc:  # strict FCFS: the head that cannot start holds the rest
                    rest.extend(q[i:])
                    break
                rest.append(j)
                if len(fails) < 8:
                    fails.append((c, m))
                continue
            if start(j, k):
                rest.extend(q[i + 1:])
                break
            top_c = max(fc) + _EPS
            top_m = max(fm) + _EPS
        return rest

    # running and waiting jobs' counts and sums, for STATE_FEATURES
    agg = [0, 0.0, 0.0, 0, 0.0, 0.0]  # run n, cpu, start; wait n, cpu, submit

    # the smallest cores and GiB among queued jobs (lazy heaps): no pass starts, or goes on,
    # when no server has room for even those
    low_c: list[tuple[float, int]] = []
    low_m: list[tuple[float, int]] = []

    def queue_floor() -> tuple[float, float]:
        while low_c and low_c[0][1] not in waiting:
            heapq.heappop(low_c)
        while low_m and low_m[0][1] not in waiting:
            heapq.heappop(low_m)
        return (low_c[0][0] if low_c else math.inf), (low_m[0][0] if low_m else math.inf)

    def to_queue(j: int) -> None:
        """j joins the queue's end (SJF: the caller pushes it on the heap)."""
        waiting.add(j)
        if fifo is not None:
            fifo.push(j, cp[j], mm[j])
        heapq.heappush(low_c, (cp[j], j))
        heapq.heappush(low_m, (mm[j], j))
        agg[3] += 1
        agg[4] += cp[j]
        agg[5] += submit[j]

    def off_queue(j: int) -> None:
        waiting.discard(j)
        if fifo is not None:
            fifo.drop(j)
        agg[3] -= 1
        agg[4] -= cp[j]
        agg[5] -= submit[j]

    def features(j: int, t: float) -> list[float]:
        rn, rc, rs, wn, wcpu, ws = agg
        return [rn, wn, rc / rn if rn else 0.0, t - rs / rn if rn else 0.0,
                wcpu / wn if wn else 0.0, t - ws / wn if wn else 0.0, num_cores,
                sum(free_c), cp[j], mm[j]]

    def run(j: int, k: int, t: float) -> None:
        agg[0] += 1
        agg[1] += cp[j]
        agg[2] += t
        free_c[k] -= cp[j]
        free_m[k] -= mm[j]
        moved(k)
        start[j] = t
        wait[j] = t - submit[j]
        server[j] = k
        heapq.heappush(events, (t + rt[j], 0, j, k))

    def drain(t: float, grew: set[int]) -> None:
        """Start queued jobs: the head only, or (work-conserving) every one that fits.
        ``grew``: the servers whose room grew since the last drain (this instant's
        finishes)."""
        if sjf:
            skipped = []
            while queue:
                kj = queue[0]
                j = kj[1]
                if j not in waiting:
                    heapq.heappop(queue)
                    continue
                k = place(j)
                if k < 0:
                    if not wc:
                        break
                    skipped.append(heapq.heappop(queue))
                    continue
                heapq.heappop(queue)
                off_queue(j)
                run(j, k, t)
            for item in skipped:
                heapq.heappush(queue, item)
            return
        if not waiting:
            return
        if wc:
            drain_grown(t, grew)
            return

        def start(j: int, k: int) -> bool:
            off_queue(j)
            run(j, k, t)
            return False

        one_pass(fifo.jobs(), free_c, free_m, start, queue_floor())

    def drain_grown(t: float, grew: set[int]) -> None:
        """FCFS, work-conserving: a queue pass over the servers that grew alone (no queued
        job fits any server after the last drain, and a job queues only when it fits
        none; ``grown``)."""
        floor = queue_floor()
        room = grown(free_c, free_m, grew, floor)
        if room is None:
            return

        def start_job(j: int, k: int) -> bool:
            off_queue(j)
            run(j, k, t)
            return False

        if len(waiting) <= _FEW:
            few_pass(fifo.jobs(), free_c, free_m, room, start_job)
        else:
            rows_pass(fifo.rows(), fifo.c, fifo.m, free_c, free_m, room,
                      lambda r, k: start_job(int(fifo.job[r]), k))

    # A work-conserving FCFS pass (``one_pass``) needs only the servers whose room grew
    # since the last pass: after it no queued job fits any server, and until the next
    # the room of every other server only shrinks, so a queued job fits one of those or
    # none, and best or first fit over them is best or first fit over all. (The real
    # window under AJW-T with 749 servers: up to 7,296 queued, 240 on average at each of
    # 362,403 finishes, each of which scanned all 749 servers per queued job before.)
    def grown(fc: list[float], fm: list[float], grew: set[int],
              floor: tuple[float, float]) -> tuple | None:
        """The servers ``grew`` in order and their free cores and GiB, or None when not
        even ``floor`` (at most the smallest queued cores and GiB) fits them."""
        if not grew:
            return None
        g = sorted(grew)
        gcl = [fc[k] for k in g]
        gml = [fm[k] for k in g]
        if floor[0] > max(gcl) + _EPS or floor[1] > max(gml) + _EPS:
            return None
        return g, gcl, gml

    def few_pass(q: list[int], fc: list[float], fm: list[float], room: tuple,
                 start) -> list[int]:
        """A work-conserving ``one_pass`` of jobs ``q`` over the grown servers alone
        (``room``, from ``grown``; ``start(job, k)``, True ends the pass): a job larger
        than their most room fails at once. Returns the jobs left, in order."""
        g, gcl, gml = room
        top_c = max(gcl) + _EPS
        top_m = max(gml) + _EPS
        rest: list[int] = []
        for i, j in enumerate(q):
            c, m = cp[j], mm[j]
            x = -1
            if c <= top_c and m <= top_m:
                x = fit(c, m, gcl, gml)
            if x < 0:
                rest.append(j)
                continue
            k = g[x]
            if start(j, k):
                rest.extend(q[i + 1:])
                break
            gcl[x], gml[x] = fc[k], fm[k]
            top_c = max(gcl) + _EPS
            top_m = max(gml) + _EPS
        return rest

    def rows_pass(rows: np.ndarray, qc: np.ndarray, qm: np.ndarray, fc: list[float],
                  fm: list[float], room: tuple, start) -> None:
        """``few_pass`` for a long queue, as arrays: the queued ``rows`` (in order; of
        cores ``qc`` and GiB ``qm``) are tested against the grown room at once, the first
        that fits starts (``start(row, k)``, True ends the pass), then the rest are
        tested against the room left."""
        g, gcl, gml = room
        gc, gm = np.array(gcl), np.array(gml)
        while len(rows):
            ok = (qc[rows, None] <= gc[None, :] + _EPS) & (qm[rows, None] <= gm[None, :] + _EPS)
            hit = np.flatnonzero(ok.any(axis=1))
            if not len(hit):
                return
            first = ok[hit[0]]  # the grown servers the first job that fits fits
            x = int(np.where(first, gc, math.inf).argmin() if best else first.argmax())
            k = g[x]
            if start(int(rows[hit[0]]), k):
                return
            gc[x], gm[x] = fc[k], fm[k]
            rows = rows[hit[1:]]  # those before it or not fitting fit no less room now

    def enqueue(j: int, t: float) -> None:
        """A job joins the queue at t (a killed speculation); it starts now if the queue
        rule lets it pass and it fits."""
        passes = wc or not waiting or (sjf and (ky[j], j) < _head(queue, waiting))
        k = place(j) if passes else -1
        if k >= 0:
            run(j, k, t)
            return
        to_queue(j)
        if sjf:
            heapq.heappush(queue, (ky[j], j))

    def forecast_start(j: int, t: float, fc: list[float], fm: list[float], ev: list,
                       found: list[float], clock: list[float]):
        """The forecast's ``start(x, k)``: j's start ends it (its wait goes into
        ``found``); another job takes its room on server k until its true finish.
        ``clock[0]`` is the forecast's time."""
        def start(x: int, k: int) -> bool:
            now = clock[0]
            if x == j:
                found.append(now - t)
                return True
            fc[k] -= cp[x]
            fm[k] -= mm[x]
            heapq.heappush(ev, (now + rt[x], 0, x, k))
            return False
        return start

    def predict_wait(j: int, t: float, horizon: float | None = None) -> float:
        """The oracle: simulate the pool forward with true runtimes until j would start
        (SWW, 000 §4.1), at most ``horizon`` (default b) ahead: inf beyond it. j must fit
        no server now (the callers ask only then)."""
        limit = b if horizon is None else horizon
        fc, fm = list(free_c), list(free_m)
        ev = list(events)  # a copy of a heap is a heap; departures are skipped as they come
        if wc and not sjf:
            return predict_grown(j, t, limit, fc, fm, ev)
        q = [x[1] for x in sorted(queue) if x[1] in waiting] if sjf else fifo.jobs()
        q.append(j)
        found: list[float] = []
        clock = [t]
        start = forecast_start(j, t, fc, fm, ev, found, clock)
        while True:
            # start what can start now, in order (head only unless work-conserving)
            rest = one_pass(q, fc, fm, start)
            if found:
                return found[0]
            q = rest
            if not ev or ev[0][0] - t > limit:
                return math.inf
            now = clock[0] = ev[0][0]
            while ev and ev[0][0] <= now:
                _, kind, x, k = heapq.heappop(ev)
                if kind == 0:  # a finish (departures and re-queues change no server)
                    fc[k] += cp[x]
                    fm[k] += mm[x]

    def predict_grown(j: int, t: float, limit: float, fc: list[float], fm: list[float],
                      ev: list) -> float:
        """``predict_wait`` for an FCFS work-conserving queue, each pass over the servers
        that grew alone (``grown``): no queued job fits any server now (the last drain),
        nor j, so the first pass would start nothing."""
        long = len(waiting) >= _FEW
        if long:  # as rows, j's the last
            rows = fifo.rows()
            qc = np.append(fifo.c[rows], cp[j])
            qm = np.append(fifo.m[rows], mm[j])
            jobs = np.append(fifo.job[rows], j)
            live = np.ones(len(jobs), dtype=bool)
            floor = (float(qc.min()), float(qm.min()))  # a bound still as jobs start
        else:
            q = fifo.jobs() + [j]
            floor = (min(cp[x] for x in q), min(mm[x] for x in q))
        found: list[float] = []
        clock = [t]
        start_job = forecast_start(j, t, fc, fm, ev, found, clock)

        def start_row(r: int, k: int) -> bool:
            live[r] = False
            return start_job(int(jobs[r]), k)

        while True:
            if not ev or ev[0][0] - t > limit:
                return math.inf
            now = clock[0] = ev[0][0]
            grew = set()
            while ev and ev[0][0] <= now:
                _, kind, x, k = heapq.heappop(ev)
                if kind == 0:  # a finish (departures and re-queues change no server)
                    fc[k] += cp[x]
                    fm[k] += mm[x]
                    grew.add(k)
            room = grown(fc, fm, grew, floor)
            if room is None:
                continue
            if long:
                rows_pass(np.flatnonzero(live), qc, qm, fc, fm, room, start_row)
            else:
                q = few_pass(q, fc, fm, room, start_job)
            if found:
                return found[0]

    def speculate(j: int, t: float) -> None:
        """003 §3.1: run j in the cloud now; it ends there if shorter than t, else it is
        killed at t and queues for the pool. On spot a revocation before either ends the
        run, and the job restarts then (003 §3.1: revoked jobs "have to restart")."""
        end = t + rt[j]
        kill = t + policy.t
        gone = revocation(j, t) if revocation is not None else math.inf
        if gone < end and gone < kill:  # a finish or a kill at the same instant comes first
            runs.append((j, t, gone, "revoked"))
            heapq.heappush(events, (gone, 3, j, -1))
        elif rt[j] < policy.t:  # speculation runs it to the end
            cloud[j] = True
            start[j] = t
            wait[j] = t - submit[j]
            runs.append((j, t, end, "done"))
        else:  # killed at t, then queued (003 §3.1)
            killed[j] = True
            runs.append((j, t, kill, "killed"))
            heapq.heappush(events, (kill, 2, j, -1))

    sub = submit.tolist()
    i = 0
    while i < n or events:
        t_next = sub[i] if i < n else math.inf
        if events and events[0][0] <= t_next:
            t = events[0][0]
            grew: set[int] = set()
            while events and events[0][0] <= t and events[0][1] == 0:
                _, _, j, k = heapq.heappop(events)
                free_c[k] += cp[j]
                free_m[k] += mm[j]
                moved(k)
                agg[0] -= 1
                agg[1] -= cp[j]
                agg[2] -= start[j]
                grew.add(k)
            if grew:
                drain(t, grew)
            while events and events[0][0] <= t and events[0][1] == 1:
                _, _, j, _ = heapq.heappop(events)
                if j in waiting:  # still queued at its patience: to the cloud
                    off_queue(j)
                    cloud[j] = True
                    start[j] = t
                    wait[j] = t - sub[j]
            while events and events[0][0] <= t and events[0][1] == 2:
                _, _, j, _ = heapq.heappop(events)
                enqueue(j, t)
            while events and events[0][0] <= t and events[0][1] == 3:
                _, _, j, _ = heapq.heappop(events)
                # a restart is an arrival: a free server if the queue rule lets it pass
                passes = wc or not waiting or (sjf and (ky[j], j) < _head(queue, waiting))
                k = place(j) if passes else -1
                if k >= 0:
                    run(j, k, t)
                else:
                    speculate(j, t)
            continue
        j = i
        i += 1
        t = t_next
        if not fits[j] or (short[j] and not short_first):
            cloud[j] = True
            start[j] = t
            continue
        # it starts now if it fits and the queue rule lets it pass those waiting: always
        # when work-conserving (those ahead do not fit now: every event drains the queue),
        # else only as the new head (an empty queue, or SJF's shortest)
        passes = wc or not waiting or (sjf and (ky[j], j) < _head(queue, waiting))
        k = place(j) if passes else -1
        if name == "njw" or short[j]:  # (a short job here: short_first)
            if k >= 0:
                run(j, k, t)
            else:
                cloud[j] = True
                start[j] = t
            continue
        if name in ("sww", "compound") and not timer:
            if over[j]:
                cloud[j] = True
                start[j] = t
                continue
            if k >= 0:
                w = 0.0
            elif predictor is not None:
                x = features(j, t)
                w = predictor(x)
                if observe is not None:
                    observe(j, x, predict_wait(j, t, horizon=4.0 * b))
            else:
                w = predict_wait(j, t) if observe is None else predict_wait(j, t, 4.0 * b)
                if observe is not None:
                    observe(j, features(j, t), w)
            if w > b:
                if under[j]:
                    leave = t + b  # waits b for nothing
                    cloud[j] = True
                    start[j] = leave
                    wait[j] = b
                else:
                    cloud[j] = True
                    start[j] = t
                continue
        if k >= 0:
            run(j, k, t)
            continue
        if name == "ljw-spec":
            speculate(j, t)
            continue
        to_queue(j)
        if sjf:
            heapq.heappush(queue, (ky[j], j))
        if name == "ajw-t" or (timer and name == "compound"):
            heapq.heappush(events, (t + b, 1, j, -1))
    return PoolRun(cloud, start, wait, fits, server, killed,
                   runs if name == "ljw-spec" else None)
