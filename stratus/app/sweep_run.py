"""Running a sweep's cells: one cell's row (in a worker process), and the executors that
run many (local processes, a Dask cluster), with the cells' progress bar."""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import Future
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stratus.app import spec as S
from stratus.app import sweep_store as store
from stratus.app.comparison import METRICS, metric
from stratus.base.errors import ConfigError

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
    inputs: dict | None = None  # the content hash of every file the spec reads


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


def _session(spec: Spec, inputs: dict | None = None):
    """The window a cell replays, loaded once per worker for every cell that shares it:
    the same window of the same file content (a file edited between two sweeps in one
    process is read again)."""
    from stratus.app.session import Session

    replay = isinstance(spec, S.ReplaySpec)
    if inputs is None:
        inputs = store.input_hashes(spec)
    k = (tuple(spec.window().items()), spec.warmup_hours, replay,
         (spec.catalog, spec.drop_oversized) if replay else None,
         json.dumps(inputs, sort_keys=True))
    if k not in _SESSIONS:
        _SESSIONS.clear()  # one window at a time: a day of Google is ~1 GiB
        sess = Session(spec, quiet=True)  # its messages ride in a row (MESSAGES)
        _SESSIONS[k] = (sess, sess.fitted(spec.catalog, spec.drop_oversized) if replay
                        else sess.trace)
    return _SESSIONS[k]


#: a row's key for what loading its window had to say (the load report): taken off the
#: row before it is written, and said by the sweep once however many cells and workers
#: loaded that window
MESSAGES = "_messages"


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
        sess, trace = _session(spec, cell.inputs)
        if sess.messages:  # the first cell of the window in this worker says them
            row[MESSAGES], sess.messages = sess.messages, []
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
            v = metric(doc, name, path)
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
EXECUTORS = "local, dask-local or dask://HOST:PORT"
#: how long to try reaching a Dask scheduler before saying it cannot be reached
DASK_CONNECT_S = 20


def check_executor(text: str) -> str:
    """``text`` as a known executor, checked in full (a scheduler's address included)
    before any cell runs."""
    if text.startswith("dask://"):
        _dask_address(text)
    elif text not in ("local", "dask-local"):
        raise ConfigError(f"--executor takes {EXECUTORS}, got {text!r}")
    if text != "local":
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            raise ConfigError(f"--executor {text} needs the dask extra: pip install "
                              "'stratus-vc[dist]'") from None
    return text


def _dask_address(text: str) -> str:
    """The scheduler's ``tcp://HOST:PORT`` for ``dask://HOST:PORT``."""
    from urllib.parse import urlsplit

    why = None
    try:
        u = urlsplit(text)
        port = u.port
    except ValueError as exc:  # a port that is not a number, a bad [IPv6] literal
        u, port, why = None, None, str(exc)
    if why is None:
        if not u.hostname:
            why = "no host"
        elif port is None:
            why = "no port"
        elif port == 0:
            why = "port 0"
        elif u.path not in ("", "/") or u.query or u.fragment or u.username:
            why = "only a host and port"
    if why:
        raise ConfigError(f"--executor {text}: {why}; a Dask scheduler is "
                          f"dask://HOST:PORT (e.g. dask://127.0.0.1:8786)")
    host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
    return f"tcp://{host}:{port}"


def _row_head(cell: Cell, code: str) -> dict:
    """What names a cell in its row: key, code, trace window, options (one column each)."""
    row = {"key": cell.key, "command": cell.command, "code_version": code,
           "trace_label": cell.trace["label"], "trace": cell.trace["spec"],
           "format": cell.trace.get("format"), "slice": cell.trace.get("slice"),
           "slices": cell.trace.get("slices"), "seed": cell.trace["seed"],
           "hours": cell.trace.get("hours"), "start": cell.trace.get("start"),
           "options_json": json.dumps(cell.options, sort_keys=True),
           # what makes two rows comparable (the report groups by it)
           "spec_json": json.dumps(cell.spec.canonical() if cell.spec else None,
                                   sort_keys=True, default=str),
           "inputs_json": json.dumps(cell.inputs, sort_keys=True)}
    for k, v in cell.options.items():  # numbers as floats, so a column has one type
        number = isinstance(v, (int, float)) and not isinstance(v, bool)
        row[f"opt_{k}"] = float(v) if number else str(v)
    return row


def cell_text(cell: Cell) -> str:
    """A cell as a progress line names it: trace label, slice, seed and options."""
    t = cell.trace
    where = f" slice {t['slice']}" if t.get("slice") is not None else ""
    opts = " ".join(f"{k}={v}" for k, v in cell.options.items())
    return f"{t['label']}{where} seed {t['seed']}" + (f" {opts}" if opts else "")


def _died(cell: Cell, code: str, why: str) -> dict:
    return {**_row_head(cell, code), "status": "failed", "error": why, "result_json": None}


# --- runners: where cells run ------------------------------------------------------------
class _Inline:
    """Cells one at a time in this process (``--workers 1``)."""

    capacity = 1

    def __init__(self, code: str) -> None:
        self.code = code

    def submit(self, cell: Cell) -> Future:
        f: Future = Future()
        f.set_result(run_cell(cell, self.code))
        return f

    def wait(self, futures: list, timeout: float | None) -> list:
        return futures

    def result(self, fut, cell: Cell) -> dict:
        return fut.result()


class _Local:
    """Cells on spawned worker processes of this machine (stratus.app.workers)."""

    def __init__(self, ex, code: str, workers: int) -> None:
        self.ex, self.code, self.capacity = ex, code, workers

    def submit(self, cell: Cell):
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self.ex.submit(run_cell, cell, self.code)
        except BrokenProcessPool:
            f: Future = Future()
            f.set_exception(BrokenProcessPool())
            return f

    def wait(self, futures: list, timeout: float | None) -> list:
        from concurrent.futures import FIRST_COMPLETED, wait

        return list(wait(futures, timeout, FIRST_COMPLETED).done)

    def result(self, fut, cell: Cell) -> dict:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return fut.result()
        except BrokenProcessPool:
            return _died(cell, self.code, "a worker process died (out of memory?)")


class _Dask:
    """Cells on a Dask cluster's workers."""

    def __init__(self, client, code: str, workers: int) -> None:
        self.client, self.code = client, code
        try:  # keep every thread of the cluster busy, and no more claimed than that
            threads = sum(client.nthreads().values())
        except Exception:  # an old or odd scheduler: the --workers given
            threads = 0
        self.capacity = max(workers, threads)

    def submit(self, cell: Cell):
        return self.client.submit(run_cell, cell, self.code, pure=False, key=f"cell-{cell.key}")

    def wait(self, futures: list, timeout: float | None) -> list:
        from dask.distributed import wait

        try:
            return list(wait(futures, timeout=timeout, return_when="FIRST_COMPLETED").done)
        except TimeoutError:
            return []

    def result(self, fut, cell: Cell) -> dict:
        try:
            return fut.result()
        except Exception as exc:  # a worker lost mid-cell
            return _died(cell, self.code, f"dask: {type(exc).__name__}: {exc}")


@contextmanager
def runner(executor: str, workers: int, code: str):
    """Where the cells run: this process, local worker processes, or a Dask cluster (a
    local one of ``workers`` processes, stratus.app.dask_local, or ``dask://HOST:PORT``).
    An exception (a Ctrl-C) stops them at once."""
    if executor == "local":
        if workers <= 1:
            yield _Inline(code)
            return
        from stratus.app.workers import Pool

        with Pool(workers) as ex:
            yield _Local(ex, code, workers)
        return
    from dask.distributed import Client

    from stratus.app import dask_local

    with (dask_local.cluster(workers) if executor == "dask-local" else
          nullcontext(_dask_address(executor))) as address:
        try:
            client = Client(address, timeout=f"{DASK_CONNECT_S}s")
        except OSError as exc:  # refused, unreachable, timed out
            raise ConfigError(f"--executor {executor}: cannot reach the Dask scheduler: "
                              f"{exc}".splitlines()[0]) from None
        try:
            yield _Dask(client, code, workers)
        finally:
            client.close()


class CellBar:
    """Cells done, failed, and the time left, on stderr: a bar drawn by rich on a terminal
    (a cell is seconds to minutes: each one redraws); into a pipe or a file, a plain line
    per finished cell, at most one each ``LINE_EVERY_S`` (and always the last), so that a
    log shows the sweep is working and where it stands."""

    #: the least wall time between two plain progress lines (the last one always shows)
    LINE_EVERY_S = 5.0

    def __init__(self, total: int, enabled: bool, stream=None) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.stream = stream or sys.stderr
        self._progress = None
        self._lines = False
        self._start = time.monotonic()
        self._last_line = -float("inf")
        if not enabled or total <= 0:
            return
        if not (hasattr(self.stream, "isatty") and self.stream.isatty()):
            self._lines = True
            return
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
            console=Console(file=self.stream), auto_refresh=False, transient=False,
            redirect_stdout=False, redirect_stderr=False)
        self._task = self._progress.add_task("sweep", total=total, failed=0)
        self._progress.start()

    def begin(self, slots: int) -> None:
        """The cells start, ``slots`` at a time (said in a pipe only: the bar shows it)."""
        if self._lines:
            self._start = time.monotonic()
            print(f"sweep: {self.total} cells to run, {slots} at a time; a line as they "
                  "finish", file=self.stream, flush=True)

    def step(self, ok: bool, what: str = "", seconds: float | None = None) -> None:
        """A cell ended (``what`` names it, ``seconds`` its wall time)."""
        self.done += 1
        self.failed += not ok
        if self._lines:
            self._line(ok, what, seconds)
            return
        if self._progress is None:
            return
        self._progress.update(self._task, completed=self.done, failed=self.failed)
        self._progress.refresh()
        if self.done == self.total:
            self.close()

    def _line(self, ok: bool, what: str, seconds: float | None) -> None:
        now = time.monotonic()
        if now - self._last_line < self.LINE_EVERY_S and self.done < self.total:
            return
        self._last_line = now
        elapsed = now - self._start
        left = ""
        if self.done < self.total:
            left = f", about {_duration(elapsed / self.done * (self.total - self.done))} left"
        last = ""
        if what:
            took = "" if seconds is None else f" in {seconds:.1f} s"
            last = f"; last: {what}{took}{'' if ok else ' (failed)'}"
        print(f"sweep: [{self.done}/{self.total}] cells done, {self.failed} failed, "
              f"{_duration(elapsed)} elapsed{left}{last}", file=self.stream, flush=True)

    def say(self, line: str) -> None:
        """One line on stderr, above the bar while it is up."""
        if self._progress is not None:
            self._progress.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s`` or ``2 h 7 min``: wall time as a person reads it."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"
