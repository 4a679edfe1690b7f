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

A replay's key with a dot is a parameter of the cell's scheduler's parts
(``clearing.threshold``), and a key that is no option of the command but one of the
scheduler's factory is that option (``pack = [true, false]`` with ``scheduler = "scloud"``):
both go into the cell's scheduler name, ``scloud?pack=true`` (stratus.app.registry).

Each cell is a spec (stratus.app.spec), built and checked before anything runs; its key is
the spec's canonical form with the content hash of every file it reads.
"""

from __future__ import annotations

import itertools
import json
import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from stratus.app import spec as S
from stratus.app import sweep_store as store
from stratus.app.spec import Spec
from stratus.app.sweep_claims import Claims
from stratus.app.sweep_run import MESSAGES, Cell, CellBar, cell_text, check_executor, runner
from stratus.base.errors import ConfigError
from stratus.base.inputs import check_input

COMMANDS = ("replay", "waiting")
SPECS = {"replay": S.ReplaySpec, "waiting": S.WaitingSpec}
TRACE_KEYS = {"label", "spec", "format", "hours", "start", "slices", "slice", "seeds"}
ALIASES = {"schedulers": "scheduler", "policies": "policy", "s": "reserved"}


def cell_spec(command: str, trace: dict, options: dict,
              label: Callable[[str], str] = lambda n: n) -> Spec:
    """The spec of one cell: the trace's window and seed, then the grid's options (``h``
    is the estimator noisy:h of Fig. 8)."""
    values = {"trace": trace["spec"], "format": trace.get("format"),
              "hours": trace.get("hours"), "start": trace.get("start"),
              "slice": trace.get("slice"), "slices": trace.get("slices"),
              "seed": trace["seed"]}
    params, other = {}, {}  # what goes into the scheduler's name; keys to look up there
    fields = set(SPECS[command].option_names())
    for k, v in options.items():
        if "." in k:  # a part's parameter: clearing.threshold (issue 21)
            params[k] = v
        elif k == "h":
            try:
                h = S.number("a positive number", 0, above=True)(v)
            except S.Bad as exc:
                raise ConfigError(f"{label(k)} {exc}") from None
            values["estimator"] = f"noisy:{h:g}"
        elif k in fields or command != "replay":
            values[k] = v
        else:
            other[k] = v
    if other:  # not the command's: an option of the cell's scheduler (scloud's pack)
        sched = str(values.get("scheduler", "stratus"))
        declared = _scheduler_options(sched, label)
        for k, v in other.items():
            if k not in declared:
                raise ConfigError(
                    f"{label(k)}: not an option of {command} nor of scheduler {sched} (its "
                    f"options: {', '.join(declared) or 'none'}; {command}'s: "
                    f"{', '.join(sorted(fields))})")
            params[k] = v
    if params:
        base, q, query = str(values.get("scheduler", "stratus")).partition("?")
        text = "&".join([query] * bool(q) + [f"{k}={_param_text(v)}" for k, v in params.items()])
        values["scheduler"] = f"{base}?{text}"
    return SPECS[command].build(values, label)


def _scheduler_options(name, label: Callable[[str], str]) -> dict:
    from stratus.app.registry import scheduler_options

    try:
        return scheduler_options(name)
    except ConfigError as exc:
        raise ConfigError(f"{label('scheduler')}: {exc}") from None


def _param_text(v) -> str:
    return "true" if v is True else "false" if v is False else str(v)


def _flat(table: dict, prefix: str = "") -> dict:
    """TOML's dotted keys (``clearing.threshold = [0.4]`` is a nested table) as flat
    ``clearing.threshold`` keys; a quoted ``"clearing.threshold"`` is flat already."""
    out = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


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
        for k, v in _flat(grid).items():
            _not_window(k, f"{path}: grid[{i}].{k}")
            axes[ALIASES.get(k, k)] = _as_list(v, f"{path}: grid[{i}].{k}")
        for k, v in _flat(fixed).items():
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


def load_config(path, results: str | None = None) -> Plan:
    """The sweep a config describes, every cell checked by the command's own parser:
    ``path`` a TOML file, or a dict of its keys (read as its TOML text would be)."""
    if isinstance(path, dict):
        from stratus.app import sweep_toml

        p, text = sweep_toml.NAME, sweep_toml.dumps(path)
    else:
        p = Path(path)
        check_input(p)
        try:
            text = p.read_text()
        except OSError as exc:
            raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
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
        if name in options or (name != "trace" and name not in TRACE_KEYS):
            return f"{path}: {trace['label']}: {name}"
        return f"{path}: traces ({trace['label']}).{'spec' if name == 'trace' else name}"
    return label


#: how often a sweep looks again at cells another sweep holds (seconds)
POLL_S = 1.0


def run_sweep(plan: Plan, executor: str, workers: int, progress: bool) -> dict:
    """Run the cells that have no finished row; write each row as it comes. Rows are
    checked, not trusted by name: a damaged one is reported and its cell runs again.
    Sweeps sharing the directory share the cells (stratus.app.sweep_claims)."""
    code = store.code_version()
    for c in plan.cells:  # every cell's spec was checked when the plan was read
        ident = identity(c.spec, code)
        c.key, c.inputs = store.cell_key(ident), ident["inputs"]
    results = plan.results
    store.check_format(results)
    results.mkdir(parents=True, exist_ok=True)
    store.mark_format(results)
    store.clean_temporaries(results)
    _keep_config(results, plan.config_text)
    done, bad = store.finished_rows(results)
    keys = {c.key for c in plan.cells}
    bar = CellBar(0, False)
    for name, why in sorted(bad.items()):
        again = name.split(".")[0] in keys
        bar.say(f"stratus: warning: {results / store.ROWS / name}: {why}; "
                + ("its cell runs again" if again else "not a cell of this config, left as is"))
    todo = [c for c in plan.cells if c.key not in done]
    # cells of one window next to each other: a worker loads each window once
    todo.sort(key=lambda c: (c.trace["label"], str(c.trace.get("slice")), c.trace["seed"]))
    bar = CellBar(len(todo), progress)
    out = {"run": 0, "elsewhere": 0, "failed": []}
    claims = Claims(results)
    try:
        with runner(executor, workers, code) as run:
            bar.begin(run.capacity)
            _drive(todo, run, claims, results, bar, out)
    finally:
        claims.close()
        bar.close()
    return {"cells_total": len(plan.cells), "cells_run": out["run"],
            "cells_skipped": len(plan.cells) - len(todo),
            "cells_done_elsewhere": out["elsewhere"], "cells_failed": len(out["failed"]),
            "rows_damaged": {n: w for n, w in sorted(bad.items())},
            "results_dir": str(results), "executor": executor, "workers": workers,
            "code_version": code, "failures": out["failed"]}


def _drive(todo: list[Cell], run, claims: Claims, results: Path, bar: CellBar,
           out: dict) -> None:
    """Claim and run cells, ``run.capacity`` at a time; cells another sweep holds wait to
    the end, then are counted when their row appears, or run here if their claim was let
    go without one."""
    import time
    from collections import deque

    start = time.time()
    pending, inflight, theirs = deque(todo), {}, []
    said: set[str] = set()  # what loading the windows had to say, each said once
    last_look, told = 0.0, False

    def finished_by_other(c: Cell) -> bool:
        rows = store.rows_dir(results)
        if store.check_row(rows / f"{c.key}.parquet", c.key) is None:
            return True
        failed = rows / f"{c.key}{store.FAILED}.parquet"  # failed there since we began
        return failed.exists() and failed.stat().st_mtime >= start

    while pending or inflight or theirs:
        while pending and len(inflight) < run.capacity:
            c = pending.popleft()
            if not claims.take(c.key):
                theirs.append(c)
                continue
            if finished_by_other(c):  # done and let go between our look and our claim
                claims.release(c.key)
                out["elsewhere"] += 1
                bar.step(True, f"{cell_text(c)} (by another sweep)")
                continue
            inflight[run.submit(c)] = c
        if inflight:
            for fut in run.wait(list(inflight), POLL_S if theirs else None):
                c = inflight.pop(fut)
                row = run.result(fut, c)
                for text in row.pop(MESSAGES, None) or ():
                    if text not in said:
                        said.add(text)
                        bar.say(text)
                store.write_row(results, row)
                claims.release(c.key)
                out["run"] += 1
                ok = row["status"] == "ok"
                if not ok:
                    out["failed"].append({"key": c.key, "trace": c.trace["label"],
                                          "options": c.options, "error": row["error"]})
                    bar.say(f"stratus: cell failed: {c.trace['label']} {c.options}: "
                            f"{row['error']}")
                bar.step(ok, cell_text(c), row.get("wall_seconds"))
        elif theirs:
            if not told:
                bar.say(f"stratus: {len(theirs)} cell(s) are running in another sweep of "
                        f"{results}; waiting for their rows")
                told = True
            time.sleep(POLL_S)
        if theirs and (not pending or time.monotonic() - last_look >= POLL_S):
            last_look = time.monotonic()
            still = []
            for c in theirs:
                if finished_by_other(c):
                    out["elsewhere"] += 1
                    bar.step(True, f"{cell_text(c)} (by another sweep)")
                elif claims.held_elsewhere(c.key):
                    still.append(c)
                else:  # let go without a row (that sweep died or was stopped): ours now
                    pending.append(c)
            theirs = still


def _keep_config(results: Path, text: str) -> None:
    """The config beside its rows, by content, so a report can say what was asked."""
    import hashlib

    d = results / "configs"
    d.mkdir(exist_ok=True)
    out = d / f"{hashlib.sha256(text.encode()).hexdigest()[:12]}.toml"
    if not out.exists():
        tmp = store.temporary(out)
        try:
            tmp.write_text(text)
            tmp.replace(out)
        finally:
            tmp.unlink(missing_ok=True)


def run_config(config, results: str | None = None, executor: str = "local",
               workers: int | None = None, progress: bool = False,
               cache_dir: str | None = None, no_cache: bool = False) -> dict:
    """The ``stratus sweep`` command's work: every option and cell checked, then the cells
    without a finished row run (see ``run_sweep``). ``config``: a TOML path or a dict of
    its keys. ``cache_dir``/``no_cache``: the trace cache every cell loads through
    (traces/cache.py), over the config's."""
    from stratus.app import outputs
    from stratus.app.runs import default_jobs

    executor = check_executor(executor)
    workers = default_jobs() if workers is None else workers
    if not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    if no_cache and cache_dir is not None:
        raise ConfigError("--no-cache and --cache-dir: give one, not both")
    plan = load_config(config, results)
    if cache_dir is not None or no_cache:
        # absolute: a worker may run elsewhere; not part of a cell's key (identity=False)
        where = None if cache_dir is None else str(Path(cache_dir).expanduser().absolute())
        for c in plan.cells:
            c.spec = c.spec.replace(cache_dir=where, no_cache=no_cache)
    inputs = outputs.input_paths(*[config] * (not isinstance(config, dict)),
                                 *{c.trace["spec"] for c in plan.cells})
    outputs.refuse_inputs(plan.results, "results directory", inputs)
    if plan.results.exists() and not plan.results.is_dir():
        raise ConfigError(f"results directory {plan.results}: exists and is not a directory")
    return run_sweep(plan, executor, workers, progress=progress)
