"""``stratus sweep CONFIG.toml``: a grid of replays or waiting-policy simulations, one row
per cell in a Parquet dataset, resumable, on local processes or a Dask cluster.

A config names the command every cell runs, the traces (spec, window, slices, seeds) and
one or more grids whose keys are that command's options; every combination is a cell::

    command = "replay"                    # or "waiting" (`stratus waiting simulate`)
    results = "results/main"              # default results directory

    [[traces]]
    label = "Google-like"                 # the report's name for it
    spec = "synthetic:google"
    hours = 24
    slices = 20                           # seeded 1-day windows 0..19 (Stratus §4.2)
    seeds = [1]

    [[grid]]                              # one table per group of cells
    scheduler = ["stratus", "hotspot"]
    market = ["spot"]
    h = [0.01, 1, 100]                    # replay: --estimator noisy:h (Fig. 8)

    [options]                             # the same for every cell
    tick = 60

Each cell is a spec (stratus.app.spec), built and checked before anything runs; its key is
the spec's canonical form with the content hash of every file it reads.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from collections.abc import Callable

from stratus.app import spec as S
from stratus.app import sweep_store as store
from stratus.app.comparison import METRICS, summary_field
from stratus.app.spec import Spec
from stratus.errors import ConfigError

COMMANDS = ("replay", "waiting")
SPECS = {"replay": S.ReplaySpec, "waiting": S.WaitingSpec}
TRACE_KEYS = {"label", "spec", "format", "hours", "start", "slices", "slice", "seeds"}
ALIASES = {"schedulers": "scheduler", "policies": "policy", "s": "reserved"}
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


@dataclass
class Cell:
    """One run of the grid: its spec (what decides its result) and what names it in the
    report (the trace's label, the grid's options as written)."""
    command: str
    trace: dict            # label, spec, format, hours, start, slice, slices, seed
    options: dict          # option name -> value, after aliases, as the config wrote it
    spec: Spec | None = None
    key: str = ""


def cell_spec(command: str, trace: dict, options: dict,
              label: Callable[[str], str] = lambda n: n) -> Spec:
    """The spec of one cell: the trace's window and seed, then the grid's options (``h``
    is the estimator noisy:h of Fig. 8)."""
    values = {"trace": trace["spec"], "format": trace.get("format"),
              "hours": trace.get("hours"), "start": trace.get("start"),
              "slice": trace.get("slice"), "slices": trace.get("slices"),
              "seed": trace["seed"]}
    for k, v in options.items():
        if k == "h":
            try:
                h = S.number("a positive number", 0, above=True)(v)
            except S.Bad as exc:
                raise ConfigError(f"{label(k)} {exc}") from None
            values["estimator"] = f"noisy:{h:g}"
        else:
            values[k] = v
    return SPECS[command].build(values, label)


def identity(spec: Spec, code: str) -> dict:
    """Everything that decides a cell's result: its canonical spec, the content of every
    file it reads (trace, spot prices, catalogs) and the code version."""
    return {"spec": spec.canonical(), "inputs": store.input_hashes(spec), "code": code}


def _as_list(v, where: str) -> list:
    vs = v if isinstance(v, list) else [v]
    if not vs:
        raise ConfigError(f"{where}: an empty list")
    for x in vs:
        if isinstance(x, (dict, list)):
            raise ConfigError(f"{where}: takes values or a list of values, got {x!r}")
        if isinstance(x, float) and not math.isfinite(x):
            raise ConfigError(f"{where}: {x!r} is not a finite number")
    return vs


def _traces(cfg: dict, path: Path) -> list[dict]:
    raw = cfg.get("traces")
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{path}: needs at least one [[traces]] table")
    out = []
    for i, t in enumerate(raw):
        where = f"{path}: traces[{i}]"
        if not isinstance(t, dict) or "spec" not in t:
            raise ConfigError(f"{where}: needs spec = \"synthetic:NAME\" or a trace path")
        bad = set(t) - TRACE_KEYS
        if bad:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(bad))} "
                              f"(known: {', '.join(sorted(TRACE_KEYS))})")
        seeds = _as_list(t.get("seeds", [0]), f"{where}.seeds")
        slices = t.get("slices")
        if slices is not None and (not isinstance(slices, int) or slices < 1):
            raise ConfigError(f"{where}.slices: a positive integer, got {slices!r}")
        picked = _as_list(t["slice"], f"{where}.slice") if "slice" in t else \
            (list(range(slices)) if slices else [None])
        for k in picked:
            if k is not None and not (isinstance(k, int) and 0 <= k < (slices or 20)):
                raise ConfigError(f"{where}.slice: {k!r} is not a slice of {slices or 20}")
        for seed, k in itertools.product(seeds, picked):
            if not isinstance(seed, int) or seed < 0:
                raise ConfigError(f"{where}.seeds: non-negative integers, got {seed!r}")
            out.append({"label": str(t.get("label", t["spec"])), "spec": str(t["spec"]),
                        "format": t.get("format"), "hours": t.get("hours"),
                        "start": t.get("start"), "slice": k,
                        "slices": (slices or 20) if k is not None else None, "seed": seed})
    return out


def _grids(cfg: dict, path: Path) -> list[dict]:
    g = cfg.get("grid", {})
    grids = g if isinstance(g, list) else [g]
    fixed = cfg.get("options", {})
    if not isinstance(fixed, dict):
        raise ConfigError(f"{path}: [options] must be a table")
    out = []
    for i, grid in enumerate(grids):
        if not isinstance(grid, dict):
            raise ConfigError(f"{path}: grid[{i}] must be a table")
        axes = {}
        for k, v in {**grid}.items():
            _not_window(k, f"{path}: grid[{i}].{k}")
            axes[ALIASES.get(k, k)] = _as_list(v, f"{path}: grid[{i}].{k}")
        for k, v in fixed.items():
            _not_window(k, f"{path}: options.{k}")
            name = ALIASES.get(k, k)
            if name in axes:
                raise ConfigError(f"{path}: {k} is both in [options] and grid[{i}]")
            if isinstance(v, (dict, list)):
                raise ConfigError(f"{path}: options.{k} takes one value")
            axes[name] = [v]
        names = list(axes)
        for combo in itertools.product(*(axes[n] for n in names)):
            out.append(dict(zip(names, combo)))
    return out


def _not_window(key: str, where: str) -> None:
    """A grid may not move a cell to another trace, window or seed behind its row's back:
    those are the [[traces]] table's (its row records them)."""
    if key in S.WINDOW_KEYS or key in ("seeds", "spec"):
        raise ConfigError(f"{where}: the trace, its window and seed are set in [[traces]] "
                          f"(spec, format, hours, start, slices, slice, seeds), not in a grid")


@dataclass
class Plan:
    command: str
    results: Path
    cells: list[Cell]
    config_text: str


def load_config(path: str, results: str | None = None) -> Plan:
    """The sweep a config describes, every cell checked by the command's own parser."""
    p = Path(path)
    try:
        text = p.read_text()
        cfg = tomllib.loads(text)
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    unknown = set(cfg) - {"command", "results", "traces", "grid", "options", "title"}
    if unknown:
        raise ConfigError(f"{p}: unknown top-level key(s) {', '.join(sorted(unknown))}")
    command = cfg.get("command", "replay")
    if command not in COMMANDS:
        raise ConfigError(f"{p}: command takes {' or '.join(COMMANDS)}, got {command!r}")
    out = results or cfg.get("results")
    if not out:
        raise ConfigError(f"{p}: no results directory (results = \"DIR\" or --results DIR)")
    cells = []
    seen = set()
    for trace in _traces(cfg, p):
        for opts in _grids(cfg, p):
            label = _labeller(p, trace, opts)
            c = Cell(command, trace, opts, cell_spec(command, trace, opts, label))
            sig = json.dumps(c.spec.canonical(), sort_keys=True, default=str)
            if sig not in seen:  # two grids may name the same cell: run it once
                seen.add(sig)
                cells.append(c)
    if not cells:
        raise ConfigError(f"{p}: the grid has no cells")
    return Plan(command, Path(out), cells, text)


def _labeller(path: Path, trace: dict, options: dict) -> Callable[[str], str]:
    """How a cell's option is named in an error: the config key it came from."""
    def label(name: str) -> str:
        if name == "estimator" and "h" in options:
            name = "h"
        if name in options:
            return f"{path}: {trace['label']}: {name}"
        return f"{path}: traces ({trace['label']}).{'spec' if name == 'trace' else name}"
    return label


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


def _local(cells: list[Cell], code: str, workers: int):
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


def _dask(cells: list[Cell], code: str, executor: str, workers: int):
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
    """Cells done and the time left, on stderr, on a terminal only."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.enabled = enabled and total > 0
        self.t0 = time.perf_counter()

    def step(self, ok: bool) -> None:
        self.done += 1
        self.failed += not ok
        if not self.enabled:
            return
        el = time.perf_counter() - self.t0
        eta = el / self.done * (self.total - self.done)
        width = 30
        fill = int(width * self.done / self.total)
        sys.stderr.write(f"\rsweep [{'#' * fill}{'-' * (width - fill)}] {self.done}/"
                         f"{self.total} cells, {self.failed} failed, ETA {_hms(eta)}  ")
        if self.done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _hms(s: float) -> str:
    s = int(s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def run_sweep(plan: Plan, executor: str, workers: int, progress: bool) -> dict:
    """Run the cells that have no finished row; write each row as it comes."""
    code = store.code_version()
    for c in plan.cells:  # every cell's spec was checked when the plan was read
        c.key = store.cell_key(identity(c.spec, code))
    results = plan.results
    store.check_format(results)
    results.mkdir(parents=True, exist_ok=True)
    store.mark_format(results)
    store.clean_temporaries(results)
    _keep_config(results, plan.config_text)
    done = store.finished_keys(results)
    todo = [c for c in plan.cells if c.key not in done]
    # cells of one window next to each other: a worker loads each window once
    todo.sort(key=lambda c: (c.trace["label"], str(c.trace.get("slice")), c.trace["seed"]))
    bar = CellBar(len(todo), progress)
    failed = []
    if todo:
        run = _local(todo, code, workers) if executor == "local" else \
            _dask(todo, code, executor, workers)
        for cell, row in run:
            store.write_row(results, row)
            ok = row["status"] == "ok"
            if not ok:
                failed.append({"key": cell.key, "trace": cell.trace["label"],
                               "options": cell.options, "error": row["error"]})
                print(f"stratus: cell failed: {cell.trace['label']} {cell.options}: "
                      f"{row['error']}", file=sys.stderr, flush=True)
            bar.step(ok)
    return {"cells_total": len(plan.cells), "cells_run": len(todo),
            "cells_skipped": len(plan.cells) - len(todo), "cells_failed": len(failed),
            "results_dir": str(results), "executor": executor, "workers": workers,
            "code_version": code, "failures": failed}


def _keep_config(results: Path, text: str) -> None:
    """The config beside its rows, by content, so a report can say what was asked."""
    import hashlib

    d = results / "configs"
    d.mkdir(exist_ok=True)
    out = d / f"{hashlib.sha256(text.encode()).hexdigest()[:12]}.toml"
    if not out.exists():
        tmp = d / f".{out.name}.tmp"
        tmp.write_text(text)
        tmp.replace(out)


def run_config(config: str, results: str | None = None, executor: str = "local",
               workers: int | None = None, progress: bool = False) -> dict:
    """The ``stratus sweep`` command's work: every option and cell checked, then the cells
    without a finished row run (see ``run_sweep``)."""
    from stratus.app import outputs
    from stratus.app.runs import default_jobs

    executor = check_executor(executor)
    workers = default_jobs() if workers is None else workers
    if not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    plan = load_config(config, results)
    inputs = outputs.input_paths(config, *{c.trace["spec"] for c in plan.cells})
    outputs.refuse_inputs(plan.results, "results directory", inputs)
    if plan.results.exists() and not plan.results.is_dir():
        raise ConfigError(f"results directory {plan.results}: exists and is not a directory")
    return run_sweep(plan, executor, workers, progress=progress)
