"""The Python API: what ``import stratus`` gives (``stratus/__init__.py`` re-exports it).
Each function's keyword arguments are the fields of its command's spec (stratus.app.spec),
so ``stratus.replay(trace, catalog="m5")`` and ``stratus replay --trace T --catalog m5`` are
one run; the CLI's commands call these functions and print what they return."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from stratus.app import spec as S
from stratus.base.errors import ConfigError

#: the y label of ``Comparison.plot`` (stratus.app.comparison.NORMALIZED_BY in full)
NORMALIZED_LABEL = "normalized cost (÷ most expensive; metrics.md)"

#: the spec's ``trace`` field when the caller hands over a loaded trace object
IN_MEMORY = "<in-memory trace>"


# --- traces and catalogs --------------------------------------------------------------------
def load_trace(spec: str, format: str | None = None, hours: float | None = None,
               start: float | None = None, slice: int | None = None,
               slices: int | None = None, seed: int = 0, cache_dir: str | None = None,
               no_cache: bool = False):
    """One window of a trace: a file or directory (``format`` as ``stratus traces formats``
    lists, guessed from the name where it can be) or ``synthetic:NAME?k=v``; ``slice`` K of
    ``slices`` picks a seeded random window (Stratus §4.2). A raw-format file is loaded
    once and then read from the trace cache (``cache_dir``, else the user's cache
    directory; ``no_cache`` turns it off; docs/reference/traces.md). The window keeps its
    way back to the trace (``.origin``), so a replay of it warms a learning estimator up on
    the history before it, as ``stratus replay --trace SPEC`` does."""
    from stratus.app.session import Origin, Session

    w = S.WindowSpec(trace=spec, format=format, hours=hours, start=start, slice=slice,
                     slices=slices, seed=seed, cache_dir=cache_dir, no_cache=no_cache)
    sess = Session(w)
    sess.trace.origin = Origin(sess)
    return sess.trace


def synthetic(name: str, seed: int = 0, **params):
    """A calibrated synthetic trace by name (google, twosigma, mms) and its parameters:
    ``load_trace("synthetic:NAME?k=v&...", seed=seed)``, so it keeps its history too."""
    from urllib.parse import urlencode

    # repr: a float's shortest text that reads back as the same float
    query = urlencode({k: repr(v) if isinstance(v, float) else v for k, v in params.items()})
    return load_trace(f"synthetic:{name}" + (f"?{query}" if query else ""), seed=seed)


def load_catalog(name_or_file: str):
    """A built-in instance catalog by name, or your own .toml/.csv catalog file."""
    from stratus.pricing.catalog_files import load_catalog as load

    return load(name_or_file)


def catalogs() -> list[dict]:
    """The built-in catalogs: name, types, families, region, date."""
    from stratus.pricing.catalog_files import builtin_names

    return [catalog_doc(load_catalog(n), types=False) for n in builtin_names()]


def catalog(name_or_file: str) -> dict:
    """One catalog's types, prices and sources (``stratus catalogs show``)."""
    return catalog_doc(load_catalog(name_or_file), types=True)


def catalog_doc(cat, types: bool) -> dict:
    doc = {"name": cat.name, "origin": cat.origin, "types": len(cat),
           "families": cat.families, "gpus": any(t.gpus for t in cat), "region": cat.region,
           "as_of": cat.as_of, "source": cat.source}
    if types:
        doc["instance_types"] = [
            {"name": t.name, "family": t.family, "vcpu": t.vcpu, "mem_gib": t.mem_gib,
             "gpus": t.gpus, "ondemand_hourly": t.ondemand_hourly,
             "reserved_hourly": t.reserved_hourly, "source": t.source or cat.source,
             "verified": t.verified} for t in cat]
    return doc


def schedulers() -> list[dict]:
    """Every registered scheduler and cost model: name, description, estimator, kind; its
    factory's options with this name's values (``NAME?OPTION=VALUE`` sets them; ``choices``:
    the words a word option takes), ``alias_of`` (the scheduler an alias is with its options
    set, else None), and its parts' parameters with their defaults
    (``NAME?KEY.NAME=VALUE`` sets them)."""
    from stratus.app.registry import all_names, get_spec
    from stratus.sim.contracts import HasParams

    out = []
    for s in map(get_spec, all_names()):
        params = {}
        if s.kind == "policy":
            sched = s.factory()
            params = sched.get_params() if isinstance(sched, HasParams) else {}
        out.append({"name": s.name, "description": s.description, "estimator": s.estimator,
                    "kind": s.kind,
                    "options": {k: s.preset.get(k, o.default) for k, o in s.options.items()},
                    "choices": {k: list(o.choices) for k, o in s.options.items() if o.choices},
                    "alias_of": s.base, "params": params})
    return out


def trace_formats() -> dict:
    """Every trace format: its name and what it reads."""
    from stratus.traces.loaders import FORMATS

    return {k: v[1] for k, v in FORMATS.items()}


def convert(input: str, output: str, format: str | None = None, force: bool = False) -> dict:
    """``input`` (a trace file, the Google 2011 directory or a synthetic spec) written to
    ``output`` as its name says: canonical Parquet (``.parquet``) or its columns as CSV
    (``.csv``, ``.csv.gz``); what ``stratus traces convert --json`` prints."""
    import time
    from pathlib import Path

    from stratus.app.outputs import check_file, input_paths
    from stratus.traces.conversion import convert_trace, output_kind

    check_file(output, "-o", input_paths(input), force)
    output_kind(Path(output))  # a name that says no format: refused before any work
    t0 = time.perf_counter()
    rep, rows = convert_trace(input, format, Path(output), force=force)
    for line in rep.lines():
        print(line, file=sys.stderr)
    return {"input": input, "output": output, "tasks": rows,
            "seconds": round(time.perf_counter() - t0, 3), "load_report": rep.as_dict()}


def describe(trace, **window) -> dict:
    """Jobs, tasks, runtimes, requests, priorities, arrivals and offered load of a trace
    (a spec string and its window options, or a loaded trace)."""
    from stratus.traces.describe import describe as describe_trace

    if isinstance(trace, str):
        trace = load_trace(trace, **window)
    return {"trace": trace.name, **describe_trace(trace)}


# --- replays --------------------------------------------------------------------------------
def _spec(cls, trace, values: dict):
    """``cls`` from the API's arguments; a trace object stands in for the spec's name."""
    name = trace if isinstance(trace, str) else IN_MEMORY
    return cls.build({"trace": name, **values})


def _history(spec, trace):
    """(history(), warm-up hours) of a loaded trace under ``spec``'s --warmup-hours: what
    its origin cuts (stratus.load_trace), else none (a trace built in Python)."""
    from stratus.app.session import getattr_warmup

    origin = getattr(trace, "origin", None)
    if origin is None:
        return (lambda: None), None
    hours = origin.warmup_hours(getattr_warmup(spec))
    return (lambda: origin.history(hours)), hours


def _window(spec: S.CloudSpec, trace):
    """(trace fitted to the catalog, history(), warm-up hours) for ``spec``."""
    from stratus.app.session import Session, fit_lines

    if isinstance(trace, str):
        sess = Session(spec)
        return sess.fitted(spec.catalog, spec.drop_oversized), sess.history, sess.warmup_hours()
    from stratus.app.session import loaded_window
    from stratus.pricing.catalog_files import get_catalog
    from stratus.traces.schema import fit_to_catalog

    trace = loaded_window(trace, spec)
    fitted = fit_to_catalog(trace, get_catalog(spec.catalog), spec.drop_oversized)
    for line in fit_lines(trace, fitted):
        print(line, file=sys.stderr)
    return (fitted, *_history(spec, trace))


def replay(trace, scheduler: str = "stratus", *, progress: bool = False, **options):
    """``trace`` (a spec string or a loaded trace) replayed under ``scheduler``; the options
    are ``stratus replay``'s (catalog, market, tick, estimator, seed, ...). Returns the
    result: ``.summary`` (a dict), ``.instances``/``.tasks``/``.jobs`` (DataFrames),
    ``.to_parquet(dir)``. A learning estimator warms up on the history before the window
    (``warmup_hours``) when ``trace`` is a spec string or a window ``load_trace`` returned;
    a trace built otherwise has none."""
    return run_replay(_spec(S.ReplaySpec, trace, {"scheduler": scheduler, **options}), trace,
                      progress)


def run_replay(spec: S.ReplaySpec, trace=None, progress: bool = False):
    from stratus.app.registry import get_spec
    from stratus.app.runs import replay_one

    trace = spec.trace if trace is None else trace
    fitted, history, warmup_h = _window(spec, trace)
    return replay_one(spec, fitted, get_spec(spec.scheduler), history, warmup_h,
                      progress=progress)


@dataclass
class Comparison:
    """Schedulers side by side (Stratus Figs. 4-5, Table 2). ``doc`` is what ``stratus
    compare --json`` prints; ``runs`` its summaries (the mean and spread per scheduler over
    several slices); ``table`` one row per scheduler."""
    doc: dict
    runs: list = field(init=False)

    def __post_init__(self) -> None:
        self.runs = self.doc["runs"]

    @property
    def table(self):
        import pandas as pd

        from stratus.app.comparison import METRICS, metric

        rows = []
        for r in self.runs:  # a run's summary, or a scheduler's spread over slices
            row = {"scheduler": r["scheduler"]}
            for k, path in METRICS.items():
                v = r[k] if "slices" in r else metric(r, k, path)
                row[k] = v["mean"] if isinstance(v, dict) and "mean" in v else v
            rows.append(row)
        return pd.DataFrame(rows).rename(columns={"utilization_constraining": "utilization"})

    def plot(self, ax=None):
        """Normalized cost per scheduler (Fig. 4) as a bar chart; returns the Axes."""
        import matplotlib.pyplot as plt

        t = self.table
        if ax is None:
            _, ax = plt.subplots(figsize=(max(4.0, 0.7 * len(t)), 3.2))
        ax.bar(t["scheduler"], t["normalized_cost"], color="#4c72b0")
        ax.set_ylabel(NORMALIZED_LABEL)
        ax.set_ylim(0, max(1.05, 1.05 * float(t["normalized_cost"].max() or 0)))  # fargate > 1
        ax.tick_params(axis="x", labelrotation=45)
        return ax

    def to_dict(self) -> dict:
        return self.doc


def _scheduler_specs(names: tuple[str, ...] | None) -> list:
    from stratus.app.registry import get_spec, scheduler_names

    return [get_spec(n) for n in (names or scheduler_names())]


def _jobs(n: int | None) -> int:
    from stratus.app.runs import default_jobs

    return default_jobs() if n is None else n


def _one_process(n: int | None) -> int:
    """The API's number of processes: one unless the caller asks for more. A worker starts
    by importing the main module, which a script written without ``if __name__ ==
    "__main__":`` would run again (docs/decisions.md, "The API runs in one process")."""
    return 1 if n is None else n


def compare(trace, schedulers=None, *, jobs: int | None = None, progress: bool = False,
            **options) -> Comparison:
    """``trace`` replayed under each of ``schedulers`` (default: every policy), in this
    process or ``jobs`` worker processes; with ``slices=N`` and no ``slice``, over N seeded
    windows."""
    return Comparison(run_compare(_spec(S.CompareSpec, trace, {
        "schedulers": schedulers, "jobs": _one_process(jobs), **options}), trace, progress))


def _each_window(spec, trace):
    """(slice, start, hours, fitted trace, history, warm-up hours) per planned window."""
    from stratus.app.session import sessions

    if not isinstance(trace, str):
        if S.slice_plan(spec) != [None]:
            raise ConfigError("slices are cut from a trace spec; a loaded trace is one window")
        fitted, history, warmup_h = _window(spec, trace)
        yield None, None, None, fitted, history, warmup_h
        return
    for k, sess in sessions(spec, S.slice_plan(spec)):
        yield (k, sess.start, sess.window_hours(), sess.fitted(spec.catalog, spec.drop_oversized),
               sess.history, sess.warmup_hours())


def run_compare(spec: S.CompareSpec, trace=None, progress: bool = False) -> dict:
    from stratus.app.comparison import aggregate, annotate
    from stratus.app.runs import print_done, run_schedulers

    trace = spec.trace if trace is None else trace
    scheds = _scheduler_specs(spec.schedulers)
    per_slice = []
    for k, start, hours, fitted, history, warmup_h in _each_window(spec, trace):
        where = "" if k is None else f"slice {k} (start {start:,.0f} s): "
        print(f"{where}trace {fitted.name}: {fitted.n_tasks:,} tasks, {fitted.n_jobs:,} jobs",
              file=sys.stderr)
        runs = annotate(run_schedulers(spec, fitted, scheds, history, warmup_h,
                                       _jobs(spec.jobs),
                                       on_done=print_done(len(scheds)) if progress else None,
                                       progress=progress))
        per_slice.append({"slice": k, "start_s": start, "hours": hours, "trace": fitted.name,
                          "runs": runs})
    from stratus.app.hotspot_note import compare_line

    if per_slice[0]["slice"] is None:
        doc = {"trace": per_slice[0]["trace"], "market": spec.market,
               "runs": per_slice[0]["runs"]}
    else:
        doc = {"trace": spec.trace, "market": spec.market, "slices": per_slice,
               "runs": aggregate([s["runs"] for s in per_slice])}
    line = compare_line(doc)  # HSpot beside task-per-instance (issue 36)
    if line:
        doc["notes"] = [line]
    return doc


def sensitivity(trace, h=(0.01, 0.1, 1, 10, 100), schedulers=("stratus", "stratus-noclear"),
                *, jobs: int | None = None, progress: bool = False, **options) -> dict:
    """Stratus §5.4.2 (Fig. 8): every scheduler with estimates = runtime x h, for each h;
    in this process or ``jobs`` worker processes."""
    return run_sensitivity(_spec(S.SensitivitySpec, trace, {
        "h": h, "schedulers": schedulers, "jobs": _one_process(jobs), **options}), trace,
        progress)


def run_sensitivity(spec: S.SensitivitySpec, trace=None, progress: bool = False) -> dict:
    from stratus.app.comparison import sensitivity as points_doc
    from stratus.app.runs import print_done, run_schedulers

    trace = spec.trace if trace is None else trace
    scheds = _scheduler_specs(spec.schedulers)
    points, n = [], 0
    for k, _, _, fitted, history, warmup_h in _each_window(spec, trace):
        n += 1
        where = "" if k is None else f"slice {k}: "
        print(f"{where}trace {fitted.name}: {fitted.n_tasks:,} tasks", file=sys.stderr)
        cells = [(s, h) for h in spec.h for s in scheds]
        runs = run_schedulers(spec, fitted, [s for s, _ in cells], history, warmup_h,
                              _jobs(spec.jobs),
                              on_done=print_done(len(cells)) if progress else None,
                              estimators=[f"noisy:{h:g}" for _, h in cells], progress=progress)
        for h in spec.h:
            points.append((h, [r for (_, hh), r in zip(cells, runs) if hh == h]))
    return {"trace": spec.trace, "slices": n, **points_doc(points)}


def estimate(trace, estimator: str = "history", **options) -> dict:
    """The error distribution of a runtime estimator on ``trace``: jobs in time order,
    predicted at submission, learned from at their end (no scheduling)."""
    return run_estimate(_spec(S.EstimateSpec, trace, {"estimator": estimator, **options}),
                        trace)


def run_estimate(spec: S.EstimateSpec, trace=None) -> dict:
    from stratus.app.runs import fitted_estimator
    from stratus.app.session import Session, loaded_window
    from stratus.policy.estimators import error_distribution, online_pass

    trace = spec.trace if trace is None else trace
    if isinstance(trace, str):
        sess = Session(spec)
        trace, history, warmup_h = sess.trace, sess.history, sess.warmup_hours()
    else:
        trace = loaded_window(trace, spec)
        history, warmup_h = _history(spec, trace)
    est = fitted_estimator(spec.estimator, spec.seed, history, trace)
    return {"trace": trace.name, "estimator": est.name,
            "warmup_hours": max(0.0, warmup_h or 0.0) if est.learns_online else 0.0,
            "warmup_jobs": est.warmup_jobs,
            **error_distribution(online_pass(est, trace.frame))}


# --- waiting policies over reserved capacity (papers 000, 003) -------------------------------
def run_live(*, clock=None, stop=None, **options) -> dict:
    """``stratus live`` from Python: ``options`` are the command's (``shadow=True``,
    ``kube_url=...``, ``namespace=...``, ``ticks=...``); returns the document ``--json``
    prints. ``clock``: a stratus.live.clock clock (default: wall time); ``stop()``: asked
    after each tick (docs/guides/live.md)."""
    from stratus.app.live import run_live as run

    return run(S.LiveSpec.build(options), clock, stop)


def analyze(policy: str, lam: float, mu: float, servers, pf: float, po: float,
            **options) -> dict:
    """The queueing model of a waiting policy over ``servers`` reserved servers (or
    "optimal"; paper 000 §3-4)."""
    return run_analyze(S.AnalyzeSpec.build({"policy": policy, "lam": lam, "mu": mu,
                                            "servers": servers, "pf": pf, "po": po,
                                            **options}))


def run_analyze(spec: S.AnalyzeSpec) -> dict:
    from stratus.waiting.analysis import evaluate, optimal_servers

    kw = dict(lam=spec.lam, mu=spec.mu, pf=spec.pf, po=spec.po, b=spec.b, t=spec.t)
    evaluate(spec.policy, 0, **kw, f_over=spec.f_over, f_under=spec.f_under)  # checks
    servers = spec.servers
    if servers == "optimal":
        servers = optimal_servers(spec.policy, **kw, f_over=spec.f_over)
    return evaluate(spec.policy, servers, **kw, f_over=spec.f_over,
                    f_under=spec.f_under).as_dict()


def simulate_waiting(trace, reserved: int | None = None, policy: str | None = None,
                     **options) -> dict:
    """``trace`` through ``reserved`` servers under a waiting ``policy``, the overflow to
    on-demand VMs (``stratus waiting simulate``; exported as ``stratus.waiting.simulate``).
    A reserved mix instead: ``simulate(trace, policy=P, reserved_mix="TYPE:COUNT,...")``."""
    given = {k: v for k, v in (("reserved", reserved), ("policy", policy)) if v is not None}
    return run_waiting(_spec(S.WaitingSpec, trace, {**given, **options}), trace)


def run_waiting(spec: S.WaitingSpec, trace=None) -> dict:
    from stratus.app.session import Session, loaded_window
    from stratus.app.waiting import simulate_trace

    trace = spec.trace if trace is None else trace
    if isinstance(trace, str):
        sess = Session(spec)
        return simulate_trace(sess.trace, spec, sess.history)
    trace = loaded_window(trace, spec)
    return simulate_trace(trace, spec, _history(spec, trace)[0])


def advise(trace, policy: str, **options) -> dict:
    """How many servers to reserve for ``trace`` under ``policy``: the MILP's start, then
    the simulated optimum (marginal analysis)."""
    return run_advise(_spec(S.AdviseSpec, trace, {"policy": policy, **options}), trace)


def run_advise(spec: S.AdviseSpec, trace=None) -> dict:
    from stratus.app.session import window_trace
    from stratus.app.waiting import advise as advise_trace

    return advise_trace(window_trace(spec, trace), spec)


def run_advise_commit(spec: S.CommitSpec, trace=None, progress: bool = False) -> dict:
    """``stratus advise --commit``: the reserved mix or savings-plan level that minimizes
    the unified replay's bill (stratus.app.commit); ``progress``: a line on stderr as each
    replay ends (which one, and its time: the bills are the table's, printed once)."""
    from stratus.app.commit import advise_commit

    done = [0]

    def line(p):
        done[0] += 1
        print(f"advise: replay {done[0]} of at most {spec.replays} done "
              f"({p['commitment']}, {p['wall_seconds'] or 0:.1f} s)", file=sys.stderr,
              flush=True)
    fitted, history, warmup_h = _window(spec, spec.trace if trace is None else trace)
    return advise_commit(spec, fitted, history, warmup_h, line if progress else None)


def advise_commit(trace, commit: str, **options) -> dict:
    """What ``stratus advise --commit`` prints, for ``trace`` (a spec string or a Trace) and
    the options as keyword arguments (those of ``CommitSpec``; ``jobs``: worker processes,
    default none)."""
    options["jobs"] = _one_process(options.get("jobs"))
    return run_advise_commit(_spec(S.CommitSpec, trace, {"commit": commit, **options}),
                             None if isinstance(trace, str) else trace)


# --- sweeps and reports ---------------------------------------------------------------------
def sweep(config, results: str | None = None, executor: str = "local",
          workers: int | None = None, progress: bool = False, cache_dir: str | None = None,
          no_cache: bool = False) -> dict:
    """The cells of a sweep config (a TOML path, or a dict of its keys, checked as the
    file would be) that have no finished row, run on ``executor`` (local: in this process,
    or ``workers`` worker processes; dask-local or dask://HOST:PORT); what ``stratus sweep
    --json`` prints (``cells_failed`` > 0: their rows say why, a rerun retries them). The
    cells share the trace cache (``cache_dir``, else the user's; ``no_cache``: off)."""
    from stratus.app.sweep import run_config

    if executor == "local":
        workers = _one_process(workers)
    return run_config(config if isinstance(config, dict) else str(config), results,
                      executor, workers, progress, cache_dir, no_cache)


def report(results, out, force: bool = False) -> dict:
    """The papers' figures from a sweep's results as one HTML page with PNGs in ``out``."""
    from stratus.app.report_html import write_report

    return write_report(str(results), str(out), force)
