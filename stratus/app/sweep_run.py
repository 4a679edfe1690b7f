"""Running a sweep's cells: one cell's row (in a worker process), and the executors that
run many (local processes, a Dask cluster), with the cells' progress bar."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stratus.app import spec as S
from stratus.app import sweep_store as store
from stratus.app.comparison import METRICS, summary_field
from stratus.errors import ConfigError

if TYPE_CHECKING:
    from stratus.app.spec import Spec


@dataclass
class Cell:
    """One run of the grid: its spec (what decides its result) and what names it in the
    report (the trace's label, the grid's options as written)."""
    command: str
    trace: dict            # label, spec, format, hours, start, slice, slices, seed
    options: dict          # option name -> value, after aliases, as the config wrote it
    spec: Spec | None = None
    key: str = ""


# the replay summary's numbers a report reads, flattened into columns: compare's metrics
# (those a single summary has; normalized cost is relative to the other cells) and a few more
REPLAY_COLUMNS = {
    **{k: path for k, path in METRICS.items() if k not in ("normalized_cost",
                                                           "cost_over_bound")},
    **{k: (k,) for k in ("tasks", "tasks_unfinished", "lower_bound_cost_usd",
                         "lower_bound_integer_usd", "estimator")},
}
WAITING_COLUMNS = {k: (k,) for k in (
    "jobs", "mean_wait_s", "normalized_price", "on_demand_fraction", "total_cost_usd",
    "reserved_cost_usd", "cloud_cost_usd", "opportunity_cost")}
# numbers that measure this machine, not the cell: kept out of the result document
WALL_KEYS = ("wall_seconds",)


# --- running one cell (in a worker process) -----------------------------------------------
_SESSIONS: dict = {}


def _session(spec: Spec):
    """The window a cell replays, loaded once per worker for every cell that shares it."""
    from stratus.app.session import Session

    replay = isinstance(spec, S.ReplaySpec)
    k = (tuple(spec.window().items()), spec.warmup_hours, replay,
         (spec.catalog, spec.drop_oversized) if replay else None)
    if k not in _SESSIONS:
        _SESSIONS.clear()  # one window at a time: a day of Google is ~1 GiB
        sess = Session(spec)
        _SESSIONS[k] = (sess, sess.fitted(spec.catalog, spec.drop_oversized) if replay
                        else sess.trace)
    return _SESSIONS[k]


def _strip_wall(doc):
    if isinstance(doc, dict):
        return {k: _strip_wall(v) for k, v in doc.items() if k not in WALL_KEYS}
    return doc


def run_cell(cell: Cell, code: str) -> dict:
    """One cell's row: its configuration, its numbers, or its error (one line)."""
    from stratus.app.runs import replay_one

    t0 = time.perf_counter()
    row = _row_head(cell, code)
    try:
        if store.code_version() != code:
            raise ConfigError("this worker runs other code than the sweep (code version "
                              f"{store.code_version()} vs {code})")
        spec = cell.spec
        sess, trace = _session(spec)
        if cell.command == "replay":
            from stratus.app.registry import get_spec

            doc = replay_one(spec, trace, get_spec(spec.scheduler), sess.history,
                             sess.warmup_hours()).summary
            cols = REPLAY_COLUMNS
        else:
            from stratus.app.waiting import simulate_trace

            doc = simulate_trace(trace, spec, sess.history)
            cols = WAITING_COLUMNS
        for name, path in cols.items():
            v = summary_field(doc, path)
            row[name] = v if v is None or isinstance(v, str) else float(v)
        row["result_json"] = json.dumps(_strip_wall(doc), sort_keys=True, default=str)
        row["status"], row["error"] = "ok", None
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # recorded, and the sweep goes on (exit status says so)
        row["status"] = "failed"
        row["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        row["result_json"] = None
    row["wall_seconds"] = round(time.perf_counter() - t0, 3)
    return row


# --- executors ----------------------------------------------------------------------------
def check_executor(text: str) -> str:
    if text in ("local", "dask-local") or (text.startswith("dask://") and
                                           len(text) > len("dask://")):
        if text != "local":
            try:
                import dask.distributed  # noqa: F401
            except ImportError:
                raise ConfigError(f"--executor {text} needs the dask extra: pip install "
                                  "'stratus-vc[dist]'") from None
        return text
    raise ConfigError(f"--executor takes local, dask-local or dask://HOST:PORT, got {text!r}")


def local_cells(cells: list[Cell], code: str, workers: int):
    """(cell, row) as cells finish, on ``workers`` spawned processes (1: in this one)."""
    if workers <= 1:
        for c in cells:
            yield c, run_cell(c, code)
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    from stratus.app.runs import _stop, ignore_sigint

    ex = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                             initializer=ignore_sigint)
    try:
        futures = {ex.submit(run_cell, c, code): c for c in cells}
        for fut in as_completed(futures):
            c = futures[fut]
            try:
                yield c, fut.result()
            except BrokenProcessPool:
                yield c, _died(c, code, "a worker process died (out of memory?)")
    except BaseException:
        _stop(ex)
        raise
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _row_head(cell: Cell, code: str) -> dict:
    """What names a cell in its row: key, code, trace window, options (one column each)."""
    row = {"key": cell.key, "command": cell.command, "code_version": code,
           "trace_label": cell.trace["label"], "trace": cell.trace["spec"],
           "format": cell.trace.get("format"), "slice": cell.trace.get("slice"),
           "slices": cell.trace.get("slices"), "seed": cell.trace["seed"],
           "hours": cell.trace.get("hours"),
           "options_json": json.dumps(cell.options, sort_keys=True)}
    for k, v in cell.options.items():  # numbers as floats, so a column has one type
        number = isinstance(v, (int, float)) and not isinstance(v, bool)
        row[f"opt_{k}"] = float(v) if number else str(v)
    return row


def _died(cell: Cell, code: str, why: str) -> dict:
    return {**_row_head(cell, code), "status": "failed", "error": why, "result_json": None}


def dask_cells(cells: list[Cell], code: str, executor: str, workers: int):
    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if executor == "dask-local":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=40)
        client = Client(cluster)
    else:
        client = Client(executor.replace("dask://", "tcp://", 1), timeout="20s")
    try:
        futures = {client.submit(run_cell, c, code, pure=False, key=f"cell-{c.key}"): c
                   for c in cells}
        for fut in as_completed(futures):
            c = futures[fut]
            try:
                yield c, fut.result()
            except Exception as exc:  # a worker lost mid-cell
                yield c, _died(c, code, f"dask: {type(exc).__name__}: {exc}")
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


class CellBar:
    """Cells done, failed, and the time left, drawn by rich on stderr, on a terminal only
    (a cell is seconds to minutes: each one redraws)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self._progress = None
        if enabled and total > 0:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                TextColumn("cells, {task.fields[failed]} failed"), TimeRemainingColumn(),
                console=Console(file=sys.stderr), auto_refresh=False, transient=False,
                redirect_stdout=False, redirect_stderr=False)
            self._task = self._progress.add_task("sweep", total=total, failed=0)
            self._progress.start()

    def step(self, ok: bool) -> None:
        self.done += 1
        self.failed += not ok
        if self._progress is None:
            return
        self._progress.update(self._task, completed=self.done, failed=self.failed)
        self._progress.refresh()
        if self.done == self.total:
            self.close()

    def say(self, line: str) -> None:
        """One line on stderr, above the bar while it is up."""
        if self._progress is not None:
            self._progress.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


