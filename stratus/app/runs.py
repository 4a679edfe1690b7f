"""Replays as the command line configures them: one in this process, or several schedulers
on one trace in worker processes (``compare --jobs N``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from stratus.app.schedulers import COST_MODEL, SchedulerSpec
from stratus.app.spec import CloudSpec
from stratus.base.errors import ConfigError, StratusError


def estimator_name(spec: CloudSpec, sched: SchedulerSpec) -> str:
    """The estimator a replay of ``sched`` uses: --estimator, else the scheduler's own."""
    return spec.estimator or sched.estimator or "oracle"


def learns_online(spec: CloudSpec, sched: SchedulerSpec) -> bool:
    from stratus.app.registry import make_estimator

    if sched.kind == COST_MODEL:
        return False
    return make_estimator(estimator_name(spec, sched), spec.seed).learns_online


def fitted_estimator(name: str, seed: int, history: Callable[[], object], trace=None):
    """The estimator ``name`` (bound to ``trace`` if given), fitted on the warm-up history
    ``history()`` when it learns; the history is loaded only then."""
    from stratus.app.registry import make_estimator

    est = make_estimator(name, seed)
    if trace is not None:
        est.bind(trace)
    if est.learns_online:
        hist = history()
        if hist is not None:
            est.fit(hist)
    return est


def replay_config(spec: CloudSpec):
    """The engine's configuration for ``spec``'s cloud: catalog, market and prices, tick,
    spin-up, migration, faults, guards (no estimator yet)."""
    from stratus.commitments.gate import parse_waiting
    from stratus.commitments.reserved import parse_reserved
    from stratus.commitments.savings import parse_savings_plan
    from stratus.pricing.catalog_files import get_catalog
    from stratus.sim.engine import ReplayConfig
    from stratus.sim.faults import parse_faults
    from stratus.sim.markets import configure_market

    cfg = ReplayConfig(tick_s=spec.tick, spinup_s=spec.spinup_range(),
                       migration_mbps=spec.migration_mbps,
                       migration_footprint=spec.migration_footprint, seed=spec.seed,
                       catalog=get_catalog(spec.catalog), max_hours=spec.max_hours,
                       faults=parse_faults(spec.faults),
                       anti_affinity=spec.anti_affinity != "off",
                       reserved=parse_reserved(spec.reserved),
                       reserved_discount=spec.reserved_discount,
                       waiting=parse_waiting(spec.waiting),
                       savings_plan=parse_savings_plan(spec.savings_plan))
    configure_market(cfg, spec.market, spec.spot_prices, spec.spot_zone, spec.spot_start)
    return cfg


def replay_one(spec: CloudSpec, trace, sched: SchedulerSpec, history: Callable[[], object],
               warmup_h: float | None = None, progress: bool = False):
    """Replay ``trace`` under scheduler ``sched`` in ``spec``'s cloud. ``history()`` gives
    the warm-up trace (or None), ``warmup_h`` hours of it; it is called only for an
    estimator that learns, so a replay that needs none never loads it."""
    from stratus.app.progress import ProgressBar
    from stratus.replays import engine

    cfg = replay_config(spec)
    if spec.market == "spot":
        from stratus.sim.markets import check_trace_spot_window

        check_trace_spot_window(cfg.prices, trace, spec.spot_start)
    if sched.kind == COST_MODEL:  # no engine: the model bills the trace itself
        return sched.factory().replay(trace, cfg)
    est = fitted_estimator(estimator_name(spec, sched), spec.seed, history)
    cfg.estimator = est
    if progress and ProgressBar.wanted():
        cfg.progress = ProgressBar(sched.name)
    res = engine(trace, sched.factory(), cfg).run()
    if est.learns_online:
        # a window with no way back to its history (a trace cut in memory) has none
        res.summary["estimator_warmup_hours"] = round(max(0.0, warmup_h or 0.0), 4)
        say_cold_start(res.summary)
    warn_unfinished(res.summary)
    return res


def say_cold_start(summary: dict) -> None:
    """One line on stderr for a replay whose learning estimator trained on no job before
    the window: its first estimates are its cold-start guesses, and nothing else says so."""
    if summary.get("estimator_warmup_jobs", 0) == 0 and "estimator_error" in summary:
        h = summary.get("estimator_warmup_hours", 0.0)
        why = ("--warmup-hours 0" if not h else
               f"no job finished in the {h:g} h before the window (--warmup-hours)")
        print(f"stratus: note: {summary['scheduler']}: the {summary['estimator']} estimator "
              f"starts cold ({why})", file=sys.stderr, flush=True)


def warn_unfinished(summary: dict) -> None:
    """One line on stderr for a replay that ended with tasks unfinished."""
    if summary.get("ended_early"):
        print(f"stratus: warning: {summary['scheduler']}: {summary['tasks_unfinished']:,} of "
              f"{summary['tasks']:,} tasks unfinished: {summary['ended_early']}",
              file=sys.stderr, flush=True)


def default_jobs() -> int:
    return os.cpu_count() or 1


# --- worker processes (stratus.app.workers) -------------------------------------------------
# Each worker receives the trace and the warm-up history once, when it starts, rather than
# regenerating or reloading them from the spec: the parent has loaded them anyway.
_W: dict = {}


def _init_worker(spec, trace, hist, warmup_h) -> None:
    _W.update(spec=spec, trace=trace, hist=hist, warmup_h=warmup_h)


def _work(cell: tuple[SchedulerSpec, dict]) -> dict:
    # the spec itself, not its name: a scheduler registered at run time is in this
    # process's registry only; its factory travels by reference (module and name)
    sched, changes = cell
    return replay_one(_W["spec"].cloud(**changes), _W["trace"], sched, lambda: _W["hist"],
                      _W["warmup_h"]).summary


def _sendable(spec: SchedulerSpec) -> SchedulerSpec:
    import pickle

    try:
        pickle.dumps(spec)
    except Exception:  # lambdas, closures, local classes: pickle raises several types
        raise ConfigError(f"scheduler {spec.name!r} cannot be sent to a worker process (its "
                          f"factory is not a module-level function); use --jobs 1") from None
    return spec


def run_schedulers(spec: CloudSpec, trace, specs: list[SchedulerSpec],
                   history: Callable[[], object], warmup_h: float | None, jobs: int,
                   on_done: Callable[[str, dict], None] | None = None,
                   estimators: list[str | None] | None = None,
                   progress: bool = False) -> list[dict]:
    """Summaries of ``trace`` replayed under each of ``specs``, in that order. ``jobs`` > 1
    replays them in that many worker processes (spawned: nothing of this process's state
    leaks in), without progress bars, calling ``on_done`` as each finishes; the numbers are
    those of a serial run except ``wall_seconds``. ``estimators`` (one per spec, None: as
    ``spec`` says) overrides ``--estimator`` run by run."""
    estimators = list(estimators) if estimators is not None else [None] * len(specs)
    if len(estimators) != len(specs):
        raise ValueError("run_schedulers: one estimator (or None) per scheduler")
    cells = [(s, {} if est is None else {"estimator": est}) for s, est in zip(specs, estimators)]
    return run_cells(spec, trace, cells, history, warmup_h, jobs,
                     None if on_done is None else (lambda i, r: on_done(specs[i].name, r)),
                     progress)


def run_cells(spec: CloudSpec, trace, cells: list[tuple[SchedulerSpec, dict]],
              history: Callable[[], object], warmup_h: float | None, jobs: int,
              on_done: Callable[[int, dict], None] | None = None,
              progress: bool = False) -> list[dict]:
    """Summaries of ``trace`` replayed once per cell (scheduler, changes to ``spec``'s cloud,
    ``CloudSpec.cloud``), in order; ``jobs`` > 1: in worker processes, ``on_done(index,
    summary)`` as each finishes (``run_schedulers``)."""
    jobs = min(jobs, len(cells))
    if jobs <= 1:  # (a progress bar per replay instead of on_done)
        return [replay_one(spec.cloud(**changes), trace, s, history, warmup_h,
                           progress=progress).summary for s, changes in cells]

    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool

    from stratus.app.workers import Pool

    cells = [(_sendable(s), changes) for s, changes in cells]
    hist = history() if any(learns_online(spec.cloud(**changes), s)
                            for s, changes in cells) else None
    results: list[dict | None] = [None] * len(cells)
    with Pool(jobs, _init_worker, (spec, trace, hist, warmup_h)) as ex:
        futures = {ex.submit(_work, cell): i for i, cell in enumerate(cells)}
        for fut in as_completed(futures):
            i = futures[fut]
            try:
                results[i] = fut.result()
            except BrokenProcessPool:
                raise StratusError("a worker process died (out of memory?); "
                                   "try fewer --jobs") from None
            if on_done:
                on_done(i, results[i])
    return results


def print_done(total: int) -> Callable[[str, dict], None]:
    """An ``on_done`` that prints one line per finished scheduler on stderr."""
    done = [0]

    def report(name: str, summary: dict) -> None:
        done[0] += 1
        print(f"{name}: done in {summary['wall_seconds']:.1f} s ({done[0]}/{total})",
              file=sys.stderr, flush=True)

    return report
