"""The event loop of paper 001 (spec A.6) for QoPS, VQoPS and DVQoPS.

One class, :class:`Sim`, runs the real experiment *and* every what-if: DVQoPS's what-if
re-simulations (001 §4.3.1) and rollback-window replays (§4.3.2) are ``Sim`` objects started
from a snapshot of the real (or replayed) schedule, taken at every arrival, and run with the
estimates as runtimes. There is no second implementation of the scheduler.

Events at equal times: completions, then reservation starts, then arrivals (spec
"Conventions"); arrivals in workload order (submit, job id; a copy after its original).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass

from stratus.qos.jobs import Workload, value
from stratus.qos.schedule import EPS, base_profile, earliest, qops_candidates, reserve

HOUR = 3600.0
SCHEMES = ("qops", "vqops", "dvqops")


@dataclass(frozen=True)
class Config:
    scheme: str = "vqops"
    oc: float = 0.0                 # VQoPS's static OC-factor; DVQoPS's initial one (A.5)
    K: int = 5                      # QoPS K-factor (A.3 decision)
    oc_tie: str = "reject"          # "reject": accept iff dR > f size; "accept": >= (A-4)
    oc_grid: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.4)
    windows_h: tuple[float, ...] = (1, 2, 4, 8, 16, 32, 64)
    wmax_h: float = 64.0
    window: str = "auto"            # "auto" or "fixed"
    w_init_h: float = 16.0          # with window "fixed": the fixed W
    whatif_start: str = "snapshot"  # or "empty"
    replay: str = "nested"          # W update reading A ("nested") or B ("tiling"), A-7


@dataclass(frozen=True)
class Snapshot:
    """The schedule just before an arrival is decided: what a what-if starts from."""
    now: float
    running: tuple  # (predicted end, processors, job)
    queue: tuple    # jobs in queue order
    starts: tuple   # their reservations


def accept_gain(gain: float, price: float, tie: str) -> bool:
    """VQoPS stage 2 (001 §4.2.1, spec A.4): the gain against the opportunity cost
    f x size, strictly greater by default, with a relative tolerance of 1e-9."""
    tol = 1e-9 * max(abs(gain), abs(price), 1e-300)
    return gain - price > tol if tie == "reject" else gain - price >= -tol


@dataclass(slots=True)
class Counts:
    """What a run of ``Sim`` counted: arrivals decided and rejected, the most processors in
    use at once, queue compressions, what-if simulations and window replays."""

    decided: int = 0
    rejected: int = 0
    max_used: int = 0
    compressions: int = 0
    whatifs: int = 0
    replays: int = 0


class Sim:
    """The machine, the schedule and the admission rule. ``whatif``: runtimes are the
    estimates (001 §4.3.1 simulates with what the scheduler knows)."""

    def __init__(self, wl: Workload, cfg: Config, *, whatif: bool = False,
                 snapshot: Snapshot | None = None, origin: float | None = None,
                 keep_snapshots: bool | None = None) -> None:
        self.wl, self.cfg, self.whatif = wl, cfg, whatif
        self.P = wl.P
        self.f = cfg.oc
        self.now = 0.0
        self.running: dict[int, tuple[float, int]] = {}  # job -> (predicted end, procs)
        self.heap: list[tuple[float, int]] = []           # (actual end, job)
        self.queue: list[int] = []
        self.start: dict[int, float] = {}  # reservation, then actual start
        self.accepted: list[int] = []
        self.used = 0
        self.counts = Counts()
        self.oc_traj: list[tuple[float, float]] = []
        self.w_traj: list[tuple[float, float]] = []
        self.dv = cfg.scheme == "dvqops"
        self.snaps: deque[tuple[int, Snapshot]] = deque()
        self.keep = self.dv if keep_snapshots is None else keep_snapshots
        self.base_queue: tuple = ()
        self.horizon = float("inf")  # how far back snapshots are kept (DVQoPS: its windows)
        if snapshot is not None:
            self._load(snapshot)
        if self.dv:
            t0 = wl.submit[0] if origin is None else origin
            self.origin = t0
            self.W = cfg.w_init_h * HOUR
            self.next_oc = t0 + self.W
            self.next_w = t0 + cfg.wmax_h * HOUR if cfg.window == "auto" else float("inf")
            self.horizon = max(self.W, cfg.wmax_h * HOUR if cfg.window == "auto" else 0.0)
            self.oc_traj.append((t0, self.f))
            self.w_traj.append((t0, self.W / HOUR))

    # --- state -------------------------------------------------------------------------

    def _load(self, snap: Snapshot) -> None:
        self.now = snap.now
        for end, p, j in snap.running:
            self.running[j] = (end, p)
            heapq.heappush(self.heap, (end, j))  # a what-if: the estimate is the runtime
            self.used += p
        self.queue = list(snap.queue)
        self.start.update(zip(snap.queue, snap.starts))
        self.base_queue = snap.queue

    def snapshot(self) -> Snapshot:
        return Snapshot(self.now, tuple((end, p, j) for j, (end, p) in self.running.items()),
                        tuple(self.queue), tuple(self.start[q] for q in self.queue))

    def profile(self):
        return base_profile(self.now, self.P, self.running.values())

    # --- events ------------------------------------------------------------------------

    def advance(self, t: float) -> None:
        """Run the completions and reservation starts up to and including t."""
        heap, start, queue = self.heap, self.start, self.queue
        while True:
            tc = heap[0][0] if heap else float("inf")
            if queue:
                q = min(queue, key=start.__getitem__)  # ties: the earlier in queue order
                tq = start[q]
            else:
                q, tq = -1, float("inf")
            if tc <= tq and tc <= t and heap:
                self._complete()
            elif tq <= t and queue:
                self._start(q, tq)
            else:
                break
        if t > self.now and t != float("inf"):
            self.now = t

    def _complete(self) -> None:
        end, j = heapq.heappop(self.heap)
        self.now = end
        pred, p = self.running.pop(j)
        self.used -= p
        if pred > end + EPS and self.queue:
            self._compress()

    def _start(self, q: int, t: float) -> None:
        self.now = t
        self.queue.remove(q)
        wl = self.wl
        p = wl.procs[q]
        self.used += p
        if self.used > self.P:  # impossible by construction: the profile holds it
            raise AssertionError(f"capacity exceeded at t={t}: {self.used} > {self.P}")
        self.counts.max_used = max(self.counts.max_used, self.used)
        self.running[q] = (t + wl.est[q], p)
        heapq.heappush(self.heap, (t + (wl.est[q] if self.whatif else wl.rt[q]), q))

    def _compress(self) -> None:
        """An early completion (spec A.2): in queue order, each reservation moves to the
        earliest start the freed profile allows, never later than it was."""
        wl, start = self.wl, self.start
        ts, fr = self.profile()
        for q in self.queue:
            reserve(ts, fr, start[q], wl.est[q], wl.procs[q])
        for q in self.queue:
            p, e, old = wl.procs[q], wl.est[q], start[q]
            reserve(ts, fr, old, e, -p)
            st = earliest(ts, fr, self.now, p, e)
            if st > old:  # cannot happen: its own old slot is still free
                raise AssertionError(f"compression moved job {q} later")
            if st < old:
                self.counts.compressions += 1
            start[q] = st
            reserve(ts, fr, st, e, p)

    # --- admission ---------------------------------------------------------------------

    def vhat_at(self, j: int, st: float) -> float:
        wl = self.wl
        return value(st + wl.est[j], wl.vhat[j], wl.submit[j], wl.est[j], wl.deadline[j])

    def arrive(self, n: int) -> bool:
        """Decide on job n at its submit time (call ``advance(submit)`` first)."""
        if self.dv:
            self._dv_updates()
        if self.keep:
            self._keep_snapshot(n)
        ok = self._decide(n)
        self.counts.decided += 1
        if ok:
            self.accepted.append(n)
        else:
            self.counts.rejected += 1
        return ok

    def _decide(self, n: int) -> bool:
        wl, cfg = self.wl, self.cfg
        start = self.start
        if cfg.scheme != "qops":
            price = self.f * wl.size[n]
            sub, est, dl, vhat = wl.submit, wl.est, wl.deadline, wl.vhat
            # the queued jobs' current values, cumulated in queue order
            cum = [0.0]
            bound = vhat[n]
            for q in self.queue:
                v = value(start[q] + est[q], vhat[q], sub[q], est[q], dl[q])
                cum.append(cum[-1] + v)
                bound += vhat[q] - v
            cur = cum[-1]
            # an upper bound on the gain: n at full value and every queued job back to
            # full value; when even that does not beat the price, stage 1 cannot change
            # the answer (an exact shortcut, not an approximation)
            if not accept_gain(bound, price, cfg.oc_tie):
                return False
        ts, fr = self.profile()
        cands = qops_candidates(self.now, ts, fr, self.queue, start, n, cfg.K, wl.procs,
                                wl.est, wl.deadline, first_only=cfg.scheme == "qops")
        if not cands:
            return False
        if cfg.scheme == "qops":  # the first feasible candidate in probe order (A.3)
            self._adopt(*cands[0])
            return True
        best, best_r = None, -1.0
        for order, tail in cands:
            # the jobs before the insertion point keep their reservations and values
            r = cum[len(order) - len(tail)]
            for j, st in tail.items():
                r += value(st + est[j], vhat[j], sub[j], est[j], dl[j])
            # ties (to rounding: summation order must not decide) go to the earlier
            if best is None or r > best_r + 1e-12 * max(1.0, abs(best_r)):
                best, best_r = (order, tail), r
        if not accept_gain(best_r - cur, price, cfg.oc_tie):
            return False
        self._adopt(*best)
        return True

    def _adopt(self, order: list[int], tail: dict[int, float]) -> None:
        self.queue = order
        self.start.update(tail)

    # --- DVQoPS ------------------------------------------------------------------------

    def _keep_snapshot(self, n: int) -> None:
        snaps = self.snaps
        snaps.append((n, self.snapshot()))
        limit = self.now - self.horizon - HOUR
        while len(snaps) > 1 and snaps[0][1].now < limit:
            snaps.popleft()

    def _snap_at(self, t: float) -> tuple[int, Snapshot] | None:
        """The snapshot at the first arrival at or after t (spec A.5)."""
        for n, s in self.snaps:  # short: pruned to the horizon
            if self.wl.submit[n] >= t:
                return n, s
        return None

    def _dv_updates(self) -> None:
        now, cfg = self.now, self.cfg
        if now >= self.next_w:
            wmax = cfg.wmax_h * HOUR
            T = self.next_w + (now - self.next_w) // wmax * wmax
            self._window_update(T)
            self.next_w = T + wmax
            self._oc_update(T)
            self.next_oc = T + self.W
        if now >= self.next_oc:
            T = self.next_oc + (now - self.next_oc) // self.W * self.W
            self._oc_update(T)
            self.next_oc = T + self.W

    def _window_jobs(self, ta: float, tb: float) -> tuple[int, int]:
        sub = self.wl.submit
        return bisect_left(sub, ta), bisect_left(sub, tb)

    def what_if(self, f: float, ta: float, tb: float) -> float | None:
        """WI(f, ta, tb): VQoPS at OC-factor f over the arrivals in [ta, tb) from the
        snapshot at the first of them, estimates as runtimes; the estimated revenue of the
        snapshot's queued jobs and the accepted window jobs (001 §4.3.1)."""
        ia, ib = self._window_jobs(ta, tb)
        if ia >= ib:
            return None
        snap = None
        if self.cfg.whatif_start == "snapshot":
            found = self._snap_at(ta)
            snap = found[1] if found is not None else None
        cfg = Config(scheme="vqops", oc=f, K=self.cfg.K, oc_tie=self.cfg.oc_tie)
        sim = Sim(self.wl, cfg, whatif=True, snapshot=snap)
        self.counts.whatifs += 1
        return sim.replay_range(ia, ib)

    def replay_range(self, ia: int, ib: int) -> float:
        sub = self.wl.submit
        for i in range(ia, ib):
            self.advance(sub[i])
            self.arrive(i)
        return self.estimated_revenue()

    def estimated_revenue(self) -> float:
        """Σ v̂ over the starting snapshot's queued jobs and the accepted jobs, at their
        (final: no arrivals follow) reservations."""
        st = self.start
        return (sum(self.vhat_at(j, st[j]) for j in self.base_queue)
                + sum(self.vhat_at(j, st[j]) for j in self.accepted))

    def _oc_update(self, T: float) -> None:
        """001 §4.3.1, Fig. 4c: the OC-factor that would have earned most over the last W."""
        ta = max(T - self.W, self.origin)
        best: list[float] = []
        scores = []
        for f in self.cfg.oc_grid:
            r = self.what_if(f, ta, T)
            if r is None:
                return  # no arrivals in the window: nothing to learn from
            scores.append((f, r))
        top = max(r for _, r in scores)
        best = [f for f, r in scores if r >= top - 1e-12 * max(1.0, abs(top))]
        self.f = self.f if self.f in best else min(best)
        self.oc_traj.append((T, self.f))

    def _window_update(self, T: float) -> None:
        """001 §4.3.2, Fig. 4b: the rollback window that would have earned most over the
        last W_max, each candidate replayed as DVQoPS at that fixed window (reading A) or
        scored by tiling (reading B)."""
        cfg = self.cfg
        wmax = cfg.wmax_h * HOUR
        start = T - wmax
        ia, ib = self._window_jobs(start, T)
        if ia >= ib:
            return
        found = self._snap_at(start)
        snap = found[1] if found is not None and cfg.whatif_start == "snapshot" else None
        scores = []
        for w in cfg.windows_h:
            if cfg.replay == "nested":
                sub = Config(scheme="dvqops", oc=self.f, K=cfg.K, oc_tie=cfg.oc_tie,
                             oc_grid=cfg.oc_grid, window="fixed", w_init_h=w,
                             whatif_start=cfg.whatif_start)
                sim = Sim(self.wl, sub, whatif=True, snapshot=snap, origin=start)
                r = sim.replay_range(ia, ib)
                self.counts.whatifs += sim.counts.whatifs
            else:  # tiling: each W-long tile by the best static f for that tile
                r = 0.0
                t = start
                while t < T - EPS:
                    vals = [self.what_if(f, t, min(t + w * HOUR, T)) for f in cfg.oc_grid]
                    vals = [v for v in vals if v is not None]
                    r += max(vals) if vals else 0.0
                    t += w * HOUR
            self.counts.replays += 1
            scores.append((w, r))
        top = max(r for _, r in scores)
        best = max(w for w, r in scores if r >= top - 1e-12 * max(1.0, abs(top)))
        self.W = best * HOUR
        self.horizon = max(self.W, wmax)
        self.w_traj.append((T, best))
