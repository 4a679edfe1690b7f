"""The ``stratus`` command. Every subcommand that produces numbers takes ``--json`` and
then prints exactly one JSON document on stdout; progress and logs go to stderr."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from stratus.errors import ConfigError, StratusError

MIN_TICK_S = 1.0  # a finer tick makes a day's replay millions of scheduling rounds
CATALOG_HELP = ("instance catalog: a built-in name (see `stratus catalogs`) or your own "
                "catalog file, .toml or .csv (default: %(default)s)")


def _number(what: str, lo: float | None = None, above: bool = False, integer: bool = False,
            hi: float | None = None):
    """An argparse type: a finite number (or integer) >= lo (> lo with ``above``), <= hi."""
    def parse(text: str):
        try:
            v = int(text) if integer else float(text)
        except ValueError:
            v = None
        ok = v is not None and math.isfinite(v) and (
            lo is None or (v > lo if above else v >= lo)) and (hi is None or v <= hi)
        if not ok:
            bound = "" if lo is None else f" {'>' if above else '>='} {lo:g}"
            bound += "" if hi is None else f" and <= {hi:g}"
            raise argparse.ArgumentTypeError(f"takes {what}{bound}, got {text!r}")
        return v
    return parse


def _add_trace_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", dest="fmt",
                   help="trace file format, e.g. swf, google2011, umass, generic?... "
                        "(see `stratus traces formats`)")
    p.add_argument("--hours", type=_number("a number of hours", 0),
                   help="length of the window in hours")
    p.add_argument("--start", type=_number("a number of seconds"),
                   help="window start, seconds of trace time")
    p.add_argument("--slice", type=int, metavar="K",
                   help="use seeded random window K of --slices (Stratus §4.2: 1-day ranges)")
    p.add_argument("--slices", type=int, default=None, metavar="N",
                   help="number of random windows --slice picks from (20); compare and "
                        "sensitivity without --slice: run slices 0..N-1 and report the spread")
    p.add_argument("--seed", type=_number("an integer", 0, integer=True, hi=2**63 - 1), default=0, help="seed for workload, spin-up, noise, slices")


def _add_replay_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", required=True, help="synthetic:NAME[?k=v&...] or a trace file")
    _add_trace_options(p)
    p.add_argument("--tick", type=_number("a number of seconds", MIN_TICK_S), default=60.0,
                   help="scheduling interval in seconds (60; at least 1)")
    p.add_argument("--market", default="spot",
                   help="market for acquisitions: spot (default; bid = on-demand) or on-demand")
    p.add_argument("--spot-prices", metavar="FILE",
                   help="AWS spot price history (JSON, CSV/TSV, text, Parquet); default: "
                        "synthetic (the bundled trace for m4)")
    p.add_argument("--spot-zone", help="availability zone to take from --spot-prices")
    p.add_argument("--spot-start", type=_number("a number of seconds"), default=0.0,
                   help="seconds into the spot history that line up with trace time 0")
    p.add_argument("--estimator", default=None,
                   help="oracle, noisy:H or history (default: the scheduler's, else oracle)")
    p.add_argument("--warmup-hours", default="auto", metavar="H|auto",
                   help="history a learning estimator trains on before the window (auto: "
                        "the window's length, 1 to 24 hours)")
    p.add_argument("--catalog", default="m4", metavar="NAME|FILE", help=CATALOG_HELP)
    p.add_argument("--drop-oversized", action="store_true",
                   help="drop jobs with a task larger than every instance type (reported)")
    p.add_argument("--spinup", default="30,160", help="instance spin-up range LO,HI seconds")
    p.add_argument("--migration-mbps", type=_number("a rate in Mbit/s", 0, above=True),
                   default=160.0, help="migration rate, Mbit/s")
    p.add_argument("--migration-footprint", default="request", metavar="request|usage:F",
                   help="memory a migration moves: the request (default) or F in (0, 1] of it")
    p.add_argument("--max-hours", type=_number("a number of hours", 0, above=True), default=None,
                   metavar="H",
                   help="stop a replay H simulated hours after it starts; tasks not done by "
                        "then are reported unfinished (default: run until every task is done "
                        "or capacity can never be had)")
    p.add_argument("--faults", default=None, metavar="crash:R,ice:P[,ice-window:S]",
                   help="the cloud's own faults (seeded): instances crash at R per "
                        "instance-hour; a request fails with probability P, and with "
                        "ice-window its type stays unavailable S seconds (default: none)")
    p.add_argument("--anti-affinity", default="on", choices=("on", "off"),
                   help="honour the trace's anti_affinity flags: no two flagged tasks of one "
                        "job on one instance at once (on; off ignores them)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")


class _UsageError(StratusError):
    """A command line argparse refuses."""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (the usage is one ``--help`` away)."""

    def error(self, message: str):
        raise _UsageError(f"{self.prog}: {message} (see `{self.prog} --help`)")


def _build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="stratus", description=" ".join(__doc__.split()),
                 epilog="--debug anywhere on the line: show the traceback of an error")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("replay", help="replay a trace under one scheduler")
    _add_replay_options(p)
    p.add_argument("--scheduler", default="stratus", help="see `stratus schedulers` (stratus)")
    p.add_argument("--save", metavar="DIR",
                   help="also write instances/jobs tables as Parquet into DIR (new or empty; "
                        "written as a unit)")
    p.add_argument("--force", action="store_true", help="replace an earlier --save in DIR")
    p = sub.add_parser("compare", help="replay one trace under several schedulers")
    _add_replay_options(p)
    p.add_argument("--schedulers", default=None,
                   help="comma-separated names (default: every policy; cost models such as "
                        "fargate by name)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="replay schedulers in N processes (default: one per core; 1: serially "
                        "in this process)")
    p = sub.add_parser("sensitivity", help="cost against runtime-estimate error h "
                                           "(Stratus §5.4.2, Fig. 8)")
    _add_replay_options(p)
    p.add_argument("--h", default="0.01,0.1,1,10,100", metavar="LIST",
                   help="estimate-error factors, comma-separated (0.01,0.1,1,10,100)")
    p.add_argument("--schedulers", default="stratus,stratus-noclear",
                   help="comma-separated names; the first is the reference "
                        "(stratus,stratus-noclear)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="replays in N processes (default: one per core)")
    p = sub.add_parser("analyze", help="queueing model of a waiting policy over s reserved "
                                       "servers (paper 000 §3-4)")
    p.add_argument("--policy", required=True,
                   help="ajw, njw, ajw-t, sww, ljw or compound")
    p.add_argument("--lam", type=float, required=True, help="job arrival rate λ (jobs/s)")
    p.add_argument("--mu", type=float, required=True, help="service rate μ (1 / mean runtime s)")
    p.add_argument("--servers", required=True, metavar="S|optimal",
                   help="reserved servers, or 'optimal' (marginal analysis: ρ_s = pf/po)")
    p.add_argument("--pf", type=float, required=True,
                   help="fixed (reserved) price per server at full use")
    p.add_argument("--po", type=float, required=True, help="on-demand price per server")
    p.add_argument("--b", type=float, default=0.0, help="waiting threshold, s (ajw-t, sww, "
                                                        "compound)")
    p.add_argument("--t", type=float, default=0.0, help="short-job threshold, s (ljw, compound)")
    p.add_argument("--f-over", type=float, default=0.0,
                   help="SWW: share of jobs over-predicting their wait (§4.1.1)")
    p.add_argument("--f-under", type=float, default=0.0,
                   help="SWW: share of jobs under-predicting their wait (§4.1.1)")
    p.add_argument("--json", action="store_true")
    wt = sub.add_parser("waiting", help="reserved pools under waiting policies (paper 000)"
                        ).add_subparsers(dest="waiting_cmd", required=True)
    p = wt.add_parser("simulate", help="a trace through s reserved servers under a waiting "
                                       "policy, overflow to on-demand VMs")
    p.add_argument("--trace", required=True, help="synthetic:NAME[?k=v&...] or a trace file")
    _add_trace_options(p)
    p.add_argument("--reserved", type=int, required=True, metavar="S", help="reserved servers")
    p.add_argument("--reserved-cores", type=float, default=None, help="cores per server")
    p.add_argument("--reserved-mem-gb", type=float, default=None, help="GiB per server")
    p.add_argument("--reserved-type", default=None, metavar="TYPE",
                   help="a --catalog type as the server (e.g. m5.4xlarge), instead of "
                        "--reserved-cores/--reserved-mem-gb")
    p.add_argument("--reserved-discount", type=float, default=None, metavar="D",
                   help="price servers at (1 - D) x on-demand (default: the catalog's "
                        "3-year reserved rate)")
    p.add_argument("--policy", required=True,
                   help="njw, ajw, ajw-t, sww, ljw, compound or ljw-spec (LJW by speculative "
                        "execution, paper 003 §3.1)")
    p.add_argument("--speculate-market", default="on-demand", metavar="on-demand|spot",
                   help="(ljw-spec) the market speculative runs use; spot: the engine's bid "
                        "and revocations, a revoked run restarts")
    p.add_argument("--spot-prices", metavar="FILE",
                   help="(spot) AWS spot price history; default: synthetic "
                        "(the bundled trace for m4)")
    p.add_argument("--spot-zone", help="availability zone to take from --spot-prices")
    p.add_argument("--spot-start", type=_number("a number of seconds"), default=0.0,
                   help="seconds into the spot history that line up with trace time 0")
    p.add_argument("--b", type=float, default=0.0, help="seconds a job may wait (ajw-t, sww, "
                                                        "compound)")
    p.add_argument("--t", type=float, default=0.0,
                   help="seconds: shorter jobs are short (ljw, compound)")
    p.add_argument("--scheduling", default="fcfs", help="queue order: fcfs or sjf")
    p.add_argument("--packing", default="best-fit", help="best-fit (default) or first-fit")
    p.add_argument("--work-conserving", action=argparse.BooleanOptionalAction, default=True,
                   help="the first queued job that fits starts (default), or only the head")
    p.add_argument("--steady-state", type=float, default=None, metavar="F",
                   help="drop the first and last F of jobs from the wait mean (default 0.1 "
                        "for synthetic:mms, else 0)")
    p.add_argument("--f-over", type=float, default=0.0,
                   help="share of jobs over-predicting (SWW: their wait; LJW: short as long)")
    p.add_argument("--f-under", type=float, default=0.0,
                   help="share of jobs under-predicting (SWW: wait; LJW: long as short)")
    p.add_argument("--catalog", default="m5", metavar="NAME|FILE",
                   help="the VMs for servers and cloud; " + CATALOG_HELP)
    p.add_argument("--wait-predictor", default="oracle", choices=("oracle", "ml"),
                   help="SWW/compound: the oracle (simulate forward with true runtimes) or a "
                        "random forest on cluster state (paper 003 §3.2), trained on the "
                        "first --train-fraction of jobs and scored on the rest")
    p.add_argument("--train-fraction", type=float, default=0.5, metavar="F")
    p.add_argument("--estimator", default="oracle",
                   help="runtimes LJW/compound classify by and SJF orders by: oracle "
                        "(default), history or noisy:H")
    p.add_argument("--cloud", default="smallest-vm", metavar="smallest-vm|SCHEDULER",
                   help="the overflow: each job on the cheapest VM that fits (the papers' "
                        "model, default), or replayed by a registered VC scheduler")
    p.add_argument("--market", default="spot", help="(--cloud SCHEDULER) spot or on-demand")
    p.add_argument("--cloud-catalog", default="m4", metavar="NAME|FILE",
                   help="(--cloud SCHEDULER) the VC's " + CATALOG_HELP)
    p.add_argument("--warmup-hours", default="auto", metavar="H|auto",
                   help="(--cloud SCHEDULER) history a learning estimator trains on")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("advise", help="how many servers to reserve for a trace under a waiting "
                                      "policy (MILP start, simulated marginal analysis)")
    p.add_argument("--trace", required=True, help="synthetic:NAME[?k=v&...] or a trace file")
    _add_trace_options(p)
    p.add_argument("--policy", required=True, help="njw, ajw-t, sww, ljw, compound (or ajw)")
    p.add_argument("--reserved-cores", type=float, default=None, help="cores per server")
    p.add_argument("--reserved-mem-gb", type=float, default=None, help="GiB per server")
    p.add_argument("--reserved-type", default=None, metavar="TYPE",
                   help="a --catalog type as the server, instead of cores and GiB")
    p.add_argument("--reserved-discount", type=float, default=None, metavar="D")
    p.add_argument("--b", type=float, default=0.0)
    p.add_argument("--t", type=float, default=0.0)
    p.add_argument("--scheduling", default="fcfs")
    p.add_argument("--packing", default="best-fit")
    p.add_argument("--work-conserving", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--slot", type=float, default=3600.0, help="MILP time slot, s (3600)")
    p.add_argument("--catalog", default="m5", metavar="NAME|FILE",
                   help="the VMs for servers and cloud; " + CATALOG_HELP)
    p.add_argument("--plot", metavar="OUT.png", help="price and wait against s (.png, .svg "
                   "or .pdf)")
    p.add_argument("--force", action="store_true", help="replace an existing --plot file")
    p.add_argument("--json", action="store_true")
    sh = sub.add_parser("share", help="a shared cloud cluster: provisioning, chargeback, "
                        "defection, flying solo (paper 004)").add_subparsers(
        dest="share_cmd", required=True)
    for name, text in (("simulate", "one policy at N reserved: bill, waits, per-user charges"),
                       ("sweep", "price and wait against N for each policy, N* (Figs. 5-6)"),
                       ("defect", "users leave when waits pass θ x runtime (Figs. 9-10)"),
                       ("solo", "each user alone on k reserved units of their own (Fig. 11)")):
        p = sh.add_parser(name, help=text)
        p.add_argument("--trace", required=True, help="a trace file or synthetic:NAME[?...]")
        _add_trace_options(p)
        p.add_argument("--policy", default="burst-wait",
                       help="lift-and-shift, burst-nowait or burst-wait (default)")
        p.add_argument("--reserved", metavar="N|optimal" if name != "sweep" else "A:B:S",
                       required=name == "simulate",
                       default={"sweep": "0:160:8"}.get(name, "optimal"),
                       help="reserved VMs (node mode) or cores (pool mode); sweep: a grid")
        if name == "sweep":
            p.add_argument("--policies", default="lift-and-shift,burst-wait,burst-nowait")
            p.add_argument("--periods", type=int, default=1,
                           help="also cut the trace into K spans: N* per span and each span "
                                "at the previous one's N* (Fig. 7)")
        else:
            p.add_argument("--grid", default="0:160:8", help="N searched for 'optimal'")
        p.add_argument("--mode", default="auto", help="pool (SWF default), node or auto")
        p.add_argument("--vm", default="m5.16xlarge", help="node mode's reserved VM")
        p.add_argument("--vm-cores", type=float, default=1.0, help="pool mode: cores per unit")
        p.add_argument("--reserved-ratio", type=float, default=0.6,
                       help="reserved price / on-demand price (0.6, 004 §5)")
        p.add_argument("--od-sizing", default="auto", help="exact (pool default) or m5")
        p.add_argument("--b", type=float, default=86400.0, help="burst-wait: longest wait, s")
        p.add_argument("--t", type=float, default=180.0, help="burst-wait: short jobs, s")
        p.add_argument("--short-jobs", default="reserved-first", help="reserved-first or ondemand")
        p.add_argument("--placement", default="best-fit", help="node mode: best-fit or first-fit")
        p.add_argument("--pricing", default="socialist", help="socialist or capitalist")
        p.add_argument("--wait-metric", default="ratio-of-means",
                       help="per-user wait/runtime: ratio-of-means or mean-of-ratios")
        if name == "defect":
            p.add_argument("--thetas", default="1,2,5,10,15,20,30,50,100,1000,inf")
            p.add_argument("--defect-on-price", action="store_true",
                           help="also leave when one's price reaches on-demand")
        if name == "solo":
            p.add_argument("--ks", default="0,1,2,4,8,16,32,64")
            p.add_argument("--burst-jobs", type=int, default=10,
                           help="bursty: this many jobs in some 5 minutes")
        if name in ("simulate", "sweep"):
            p.add_argument("--steady-state", type=float, default=0.0, metavar="F",
                           help="mean wait without the first and last F of jobs (0)")
        if name == "simulate":
            p.add_argument("--save", metavar="DIR", help="write jobs.parquet into DIR")
            p.add_argument("--strict", action="store_true",
                           help="a job that can never fit the reserved capacity is an error")
        p.add_argument("--plot", metavar="OUT.png", help="004's figures for this command")
        p.add_argument("--force", action="store_true", help="replace --plot / --save output")
        p.add_argument("--json", action="store_true")
    p = sub.add_parser("estimate", help="error distribution of a runtime estimator on a trace")
    p.add_argument("--trace", required=True)
    _add_trace_options(p)
    p.add_argument("--estimator", default="history", help="oracle, noisy:H or history (default)")
    p.add_argument("--warmup-hours", default="auto", metavar="H|auto")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("sweep", help="a grid of replays or waiting simulations from a TOML "
                                     "config, one Parquet row per cell, resumable")
    p.add_argument("config", metavar="CONFIG.toml", help="the sweep (see examples/)")
    p.add_argument("--results", metavar="DIR", help="results directory (default: the "
                                                    "config's results)")
    p.add_argument("--executor", default="local", metavar="local|dask-local|dask://HOST:PORT",
                   help="processes on this machine (default), a Dask LocalCluster, or a "
                        "running Dask scheduler")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes (default: one per core)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p = sub.add_parser("report", help="the papers' figures from a sweep's results, as one "
                                      "HTML page with PNGs")
    p.add_argument("results", metavar="RESULTS_DIR", help="a sweep's results directory")
    p.add_argument("-o", "--output", required=True, metavar="OUT_DIR",
                   help="directory for index.html and its figures (new or empty)")
    p.add_argument("--force", action="store_true", help="replace an earlier report in OUT_DIR")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p = sub.add_parser("schedulers", help="list the registered schedulers")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("catalogs", help="list the built-in instance catalogs; `catalogs show "
                                        "NAME|FILE` prints one")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    cs = p.add_subparsers(dest="catalogs_cmd")
    q = cs.add_parser("show", help="one catalog's types: a built-in name or a .toml/.csv file")
    q.add_argument("catalog", metavar="NAME|FILE")
    q.add_argument("--json", dest="show_json", action="store_true",
                   help="print one JSON document on stdout")

    tr = sub.add_parser("traces", help="convert and characterize traces").add_subparsers(
        dest="traces_cmd", required=True)
    p = tr.add_parser("convert", help="write a trace as canonical Parquet (streams big inputs)")
    p.add_argument("input", help="trace file, the Google 2011 directory or synthetic:NAME[?k=v&...]")
    p.add_argument("--format", dest="fmt", help="input format (see `stratus traces formats`)")
    p.add_argument("-o", "--output", required=True, help="output .parquet")
    p.add_argument("--force", action="store_true", help="replace the output if it exists")
    p.add_argument("--json", action="store_true")
    p = tr.add_parser("describe", help="jobs, tasks, runtimes, requests, priorities, arrivals, "
                                      "offered load of a trace")
    p.add_argument("trace", help="synthetic:NAME[?k=v&...] or a trace file")
    _add_trace_options(p)
    p.add_argument("--plot", metavar="OUT.png", help="also draw runtime/job-size CDFs and "
                   "arrivals (.png, .svg or .pdf)")
    p.add_argument("--force", action="store_true", help="replace the --plot file if it exists")
    p.add_argument("--json", action="store_true")
    p = tr.add_parser("formats", help="list the trace formats")
    p.add_argument("--json", action="store_true")
    from stratus.app.qos import add_parsers as add_qos_parsers

    add_qos_parsers(sub, _add_trace_options, _number)
    return ap


class _Session:
    """One command's trace window, history and catalog, loaded once."""

    def __init__(self, args, source=None) -> None:
        from traces.spec import TraceSource, warmup_hours

        self.args = args
        if hasattr(args, "warmup_hours"):  # a bad value fails before the (slow) load
            warmup_hours(args.warmup_hours, 1.0)
        # a file is read once however many slices are cut from it
        self.source = source or TraceSource(args.trace, args.fmt, args.seed)
        if args.slice is not None:
            self.start, self.hours = self.source.slice(args.slice, args.slices or 20,
                                                         args.hours)
        else:
            self.start, self.hours = args.start, args.hours
        self.trace = self.source.window(self.start, self.hours)
        self._history = None
        self._history_loaded = False
        _report_load(self.trace)

    def window_hours(self) -> float:
        """The window's length: --hours, a synthetic spec's hours, else the trace's span."""
        if self.hours is not None:
            return float(self.hours)
        params = self.trace.meta.get("params") or {}
        if "hours" in params:
            return float(params["hours"])
        return self.trace.span_s / 3600.0

    def warmup_hours(self) -> float:
        from traces.spec import warmup_hours

        return warmup_hours(self.args.warmup_hours, self.window_hours())

    def history(self):
        """The warm-up history (--warmup-hours before the window), loaded on first use."""
        if not self._history_loaded:
            hours = self.warmup_hours()
            self._history = self.source.history(self.start, hours) if hours > 0 else None
            self._history_loaded = True
        return self._history


def _report_load(trace) -> None:
    rep = trace.meta.get("load_report")
    if rep and (rep.get("dropped") or rep.get("notes")):
        from traces.schema import LoadReport

        for line in LoadReport.from_dict(rep, trace.name).lines():
            print(line, file=sys.stderr)


def _fitted(sess: _Session):
    from pricing.catalog_files import get_catalog
    from traces.schema import fit_to_catalog

    trace = fit_to_catalog(sess.trace, get_catalog(sess.args.catalog), sess.args.drop_oversized)
    if trace is not sess.trace:
        _report_load(trace)
    return trace


def _inputs(args) -> list:
    """The files and directories a command reads (an output may never be one of them)."""
    from stratus.app.outputs import input_paths

    return input_paths(getattr(args, "trace", None), getattr(args, "spot_prices", None),
                       getattr(args, "input", None))


def check_catalogs(args) -> None:
    """Resolve (and so validate) --catalog and --cloud-catalog before any long work."""
    from pricing.catalog_files import get_catalog

    for attr in ("catalog", "cloud_catalog"):
        if getattr(args, attr, None) is not None:
            get_catalog(getattr(args, attr))


def _check_cloud_options(args) -> None:
    """Fail on a bad cloud option before the (possibly slow) trace load."""
    from stratus.app.runs import spinup_range
    from stratus.footprint import footprint_fraction

    check_catalogs(args)
    spinup_range(args.spinup)
    footprint_fraction(args.migration_footprint)
    if args.max_hours is not None and not args.max_hours > 0:
        raise ConfigError(f"--max-hours takes a positive number of hours, got {args.max_hours}")
    from stratus.faults import parse_faults

    parse_faults(args.faults)


def check_replay(args):
    """The scheduler a replay runs, with every cloud option checked before the load."""
    from stratus.app.registry import get_spec, make_estimator

    spec = get_spec(args.scheduler)  # an unknown name fails before the (slow) load
    _check_cloud_options(args)
    if args.estimator is not None:
        make_estimator(args.estimator, args.seed)
    return spec


def replay_window(args, spec):
    """``args``'s window replayed under ``spec``: the result of ``stratus replay``."""
    from stratus.app.runs import replay_one

    sess = _Session(args)
    return replay_one(args, _fitted(sess), spec, sess.history, sess.warmup_hours(),
                      progress=not args.no_progress)


def cmd_replay(args) -> int:
    from stratus.app import outputs

    spec = check_replay(args)
    save = (outputs.check_dir(args.save, "--save", _inputs(args), args.force)
            if args.save else None)  # before the run, not after it
    res = replay_window(args, spec)
    if save is not None:
        outputs.write_dir(save, {"instances.parquet": res.instances.to_parquet,
                                 "jobs.parquet": res.jobs.to_parquet})
        print(f"wrote {save}/instances.parquet and jobs.parquet", file=sys.stderr)
    if args.json:
        print(res.to_json())
    else:
        from stratus.app.report import summary_table

        print(summary_table(res.summary))
    return 0


def _scheduler_specs(text: str | None) -> list:
    from stratus.app.registry import get_spec, scheduler_names

    names = [n.strip() for n in text.split(",") if n.strip()] if text else scheduler_names()
    if not names:
        raise ConfigError("--schedulers names no scheduler")
    if len(set(names)) != len(names):
        raise ConfigError(f"--schedulers names a scheduler twice: {text!r}")
    return [get_spec(n) for n in names]  # an unknown name fails before the (slow) load


def _jobs(args) -> int:
    from stratus.app.runs import default_jobs

    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, got {jobs}")
    return jobs


def _slice_plan(args) -> list[int | None]:
    """The slices a compare or sensitivity run replays: [None] for the one window the
    trace options name; slices 0..N-1 for --slices N without --slice."""
    if args.slices is not None and args.slices < 1:
        raise ConfigError(f"--slices must be at least 1, got {args.slices}")
    if args.slice is not None or args.slices is None:
        return [None]
    if args.start is not None:
        raise ConfigError("--slices N replays N random windows: it cannot be combined with "
                          "--start (use --slice K to pick one)")
    return list(range(args.slices))


def _sessions(args):
    """One session per planned slice, all cut from one trace source."""
    import argparse

    plan = _slice_plan(args)
    source = None
    for k in plan:
        a = args if k is None else argparse.Namespace(**{**vars(args), "slice": k})
        sess = _Session(a, source)
        source = sess.source
        yield k, sess


def cmd_compare(args) -> int:
    from stratus.app.comparison import aggregate, annotate
    from stratus.app.report import comparison_table, slices_table
    from stratus.app.runs import print_done, run_schedulers
    from stratus.progress import ProgressBar

    specs = _scheduler_specs(args.schedulers)
    jobs = _jobs(args)
    _check_cloud_options(args)
    per_slice = []
    for k, sess in _sessions(args):
        trace = _fitted(sess)
        where = "" if k is None else f"slice {k} (start {sess.start:,.0f} s): "
        print(f"{where}trace {trace.name}: {trace.n_tasks:,} tasks, {trace.n_jobs:,} jobs",
              file=sys.stderr)
        tell = print_done(len(specs)) if not args.no_progress and ProgressBar.wanted() else None
        runs = annotate(run_schedulers(args, trace, specs, sess.history, sess.warmup_hours(),
                                       jobs, on_done=tell))
        per_slice.append({"slice": k, "start_s": sess.start, "hours": sess.window_hours(),
                          "trace": trace.name, "runs": runs})
    if per_slice[0]["slice"] is None:
        doc = {"trace": per_slice[0]["trace"], "market": args.market, "runs": per_slice[0]["runs"]}
        text = comparison_table(doc["runs"])
    else:
        doc = {"trace": args.trace, "market": args.market, "slices": per_slice,
               "runs": aggregate([s["runs"] for s in per_slice])}
        text = slices_table(doc["runs"])
    print(json.dumps(doc) if args.json else text)
    return 0


def _h_list(text: str) -> list[float]:
    try:
        hs = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--h takes comma-separated positive numbers, got {text!r}") from None
    if not hs or any(not (h > 0) or h == float("inf") for h in hs):
        raise ConfigError(f"--h takes comma-separated positive numbers, got {text!r}")
    return sorted(set(hs))


def cmd_sensitivity(args) -> int:
    """Stratus §5.4.2: every scheduler with estimates = runtime x h_tau, for each h."""
    from stratus.app.comparison import sensitivity
    from stratus.app.report import sensitivity_table
    from stratus.app.runs import print_done, run_schedulers
    from stratus.progress import ProgressBar

    if args.estimator is not None:
        raise ConfigError("sensitivity sets the estimator itself (noisy:h); drop --estimator")
    hs = _h_list(args.h)
    specs = _scheduler_specs(args.schedulers)
    jobs = _jobs(args)
    _check_cloud_options(args)
    points = []
    for k, sess in _sessions(args):
        trace = _fitted(sess)
        where = "" if k is None else f"slice {k}: "
        print(f"{where}trace {trace.name}: {trace.n_tasks:,} tasks", file=sys.stderr)
        cells = [(s, h) for h in hs for s in specs]
        tell = (print_done(len(cells)) if not args.no_progress and ProgressBar.wanted()
                else None)
        runs = run_schedulers(args, trace, [s for s, _ in cells], sess.history,
                              sess.warmup_hours(), jobs, on_done=tell,
                              estimators=[f"noisy:{h:g}" for _, h in cells])
        for h in hs:
            points.append((h, [r for (_, hh), r in zip(cells, runs) if hh == h]))
    doc = {"trace": args.trace, "slices": len(_slice_plan(args)), **sensitivity(points)}
    print(json.dumps(doc) if args.json else sensitivity_table(doc))
    return 0


def _print_fields(args, out: dict) -> int:
    """One JSON document with --json, else a field/value table."""
    if args.json:
        print(json.dumps(out))
        return 0
    from stratus.app.report import table

    print(table(("field", "value"), list(out.items()), align_left=2))
    return 0


def cmd_waiting(args) -> int:
    from stratus.app.waiting import simulate_trace

    check_waiting(args)
    sess = _Session(args)
    out = simulate_trace(sess.trace, args, sess.history)
    return _print_fields(args, out)


def check_waiting(args) -> None:
    """Every option of ``waiting simulate`` checked before the trace is read."""
    from stratus.app.waiting import check_speculation, server_shape
    from stratus.waiting.pool import PoolSpec, WaitingPolicy

    check_catalogs(args)
    server_shape(args)
    check_speculation(args)
    PoolSpec(args.reserved, args.reserved_cores, args.reserved_mem_gb, args.packing,
             args.scheduling, args.work_conserving)
    WaitingPolicy(args.policy, args.b, args.t)
    if args.steady_state is not None and not (0 <= args.steady_state < 0.5):
        raise ConfigError(f"--steady-state takes a fraction in [0, 0.5), got {args.steady_state}")
    if args.estimator != "oracle":
        from stratus.app.registry import make_estimator

        make_estimator(args.estimator, args.seed)
    if args.wait_predictor == "ml":
        if args.policy not in ("sww", "compound"):
            raise ConfigError("--wait-predictor ml is for --policy sww or compound")
        if not (0 < args.train_fraction < 1):
            raise ConfigError(f"--train-fraction takes a fraction in (0, 1), got "
                              f"{args.train_fraction}")
    if args.cloud != "smallest-vm":
        from stratus.app.registry import get_spec
        get_spec(args.cloud)
        if args.market not in ("spot", "on-demand"):
            raise ConfigError(f"--market takes spot or on-demand, got {args.market!r}")


def cmd_advise(args) -> int:
    from stratus.app import outputs
    from stratus.app.waiting import advise, plot_advice, server_shape
    from stratus.waiting.pool import PoolSpec, WaitingPolicy

    check_catalogs(args)
    server_shape(args)
    PoolSpec(1, args.reserved_cores, args.reserved_mem_gb, args.packing, args.scheduling,
             args.work_conserving)
    WaitingPolicy(args.policy, args.b, args.t)
    if not (args.slot > 0 and args.slot < float("inf")):
        raise ConfigError(f"--slot must be a positive number of seconds, got {args.slot}")
    png, fmt = outputs.check_plot(args.plot, "--plot", _inputs(args), args.force) \
        if args.plot else (None, None)
    sess = _Session(args)
    doc = advise(sess.trace, args)
    if png is not None:
        outputs.write_file(png, lambda tmp: plot_advice(doc, tmp, fmt))
        print(f"wrote {png}", file=sys.stderr)
    if args.json:
        print(json.dumps(doc))
        return 0
    from stratus.app.report import table

    o, m = doc["optimal"], doc["at_milp"]
    print(table(("", "servers", "total $", "normalized", "mean wait s", "on demand"),
                [("simulated optimum", o["servers"], o["total_cost_usd"], o["normalized_price"],
                  o["mean_wait_s"], o["on_demand_fraction"]),
                 ("MILP start", m["servers"], m["total_cost_usd"], m["normalized_price"],
                  m["mean_wait_s"], m["on_demand_fraction"])]))
    return 0


def cmd_analyze(args) -> int:
    from stratus.waiting.analysis import evaluate, optimal_servers

    kw = dict(lam=args.lam, mu=args.mu, pf=args.pf, po=args.po)
    extra = dict(b=args.b, t=args.t)
    evaluate(args.policy, 0, **kw, **extra, f_over=args.f_over, f_under=args.f_under)  # checks
    if args.servers.strip().lower() == "optimal":
        servers = optimal_servers(args.policy, **kw, **extra, f_over=args.f_over)
    else:
        try:
            servers = int(args.servers)
        except ValueError:
            raise ConfigError(f"--servers takes a whole number or 'optimal', got "
                              f"{args.servers!r}") from None
    out = evaluate(args.policy, servers, **kw, **extra, f_over=args.f_over,
                   f_under=args.f_under).as_dict()
    return _print_fields(args, out)


def cmd_estimate(args) -> int:
    """Jobs in time order: predicted at submit, learned from at their end (no scheduling)."""
    from stratus.app.registry import make_estimator
    from stratus.estimators import error_distribution, online_pass

    sess = _Session(args)
    trace = sess.trace
    est = make_estimator(args.estimator, args.seed)
    est.bind(trace)
    if est.learns_online:
        hist = sess.history()
        if hist is not None:
            est.fit(hist)
    out = {"trace": trace.name, "estimator": est.name,
           "warmup_hours": max(0.0, sess.warmup_hours()) if est.learns_online else 0.0,
           "warmup_jobs": getattr(est, "warmup_jobs", 0),
           **error_distribution(online_pass(est, trace.frame))}
    if args.json:
        print(json.dumps(out))
        return 0
    from stratus.app.report import table

    pct = out.get("relative_error_percentiles", {})
    rows = [("trace", out["trace"]), ("estimator", out["estimator"]),
            ("jobs (warm-up jobs)", f"{out['jobs']:,} ({out['warmup_jobs']:,})")]
    rows += [(f"relative error {k}", f"{v:+.3f}") for k, v in pct.items()]
    rows += [(k.replace("_", " "), out[k]) for k in ("within_10pct", "within_factor_2",
                                                     "median_abs_log_ratio", "under_estimates")
             if k in out]
    print(table(("metric", "value"), rows, align_left=2))
    return 0


def cmd_schedulers(args) -> int:
    from stratus.app.registry import all_names, get_spec

    specs = [get_spec(n) for n in all_names()]
    if args.json:
        print(json.dumps([{"name": s.name, "description": s.description, "estimator": s.estimator,
                           "kind": s.kind} for s in specs]))
    else:
        from stratus.app.report import table

        print(table(("name", "kind", "estimator", "description"),
                    [(s.name, s.kind, s.estimator or "(replay's)", s.description)
                     for s in specs], align_left=4))
    return 0


def cmd_catalogs(args) -> int:
    """``stratus catalogs``: the built-in catalogs; ``catalogs show X``: one catalog."""
    from pricing.catalog_files import builtin_names, load_catalog
    from stratus.app.report import table

    if args.catalogs_cmd == "show":
        cat = load_catalog(args.catalog)
        doc = _catalog_doc(cat, types=True)
        if args.json or args.show_json:
            print(json.dumps(doc))
            return 0
        head = [f"catalog {doc['name']}: {doc['types']} types, families "
                f"{', '.join(doc['families'])}"]
        head += [f"{k}: {doc[k]}" for k in ("region", "as_of", "source") if doc[k]]
        print("\n".join(head))
        print(table(("type", "family", "vcpu", "mem_gib", "gpus", "ondemand $/h",
                     "reserved $/h", "verified"),
                    [(t["name"], t["family"], f"{t['vcpu']:g}", f"{t['mem_gib']:g}", t["gpus"],
                      f"{t['ondemand_hourly']:g}",
                      "" if t["reserved_hourly"] is None else f"{t['reserved_hourly']:.6g}",
                      "yes" if t["verified"] else "no")
                     for t in doc["instance_types"]], align_left=2))
        return 0
    docs = [_catalog_doc(load_catalog(n), types=False) for n in builtin_names()]
    if args.json:
        print(json.dumps(docs))
        return 0
    print(table(("name", "types", "families", "region", "as_of"),
                [(d["name"], d["types"], ",".join(d["families"]), d["region"], d["as_of"])
                 for d in docs], align_left=5))
    return 0


def _catalog_doc(cat, types: bool) -> dict:
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


def cmd_traces(args) -> int:
    return {"convert": _traces_convert, "describe": _traces_describe,
            "formats": _traces_formats}[args.traces_cmd](args)


def _traces_convert(args) -> int:
    import time
    from pathlib import Path

    import pyarrow.parquet as pq

    from stratus.app.outputs import check_file
    from traces.conversion import convert_trace

    check_file(args.output, "-o", _inputs(args), args.force)
    t0 = time.perf_counter()
    rep = convert_trace(args.input, args.fmt, Path(args.output), force=args.force)
    rows = pq.ParquetFile(args.output).metadata.num_rows
    for line in rep.lines():
        print(line, file=sys.stderr)
    out = {"input": args.input, "output": args.output, "tasks": rows,
           "seconds": round(time.perf_counter() - t0, 3), "load_report": rep.as_dict()}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"wrote {rows:,} tasks to {args.output} in {out['seconds']:.1f} s")
    return 0


def _traces_describe(args) -> int:
    from stratus.app import outputs
    from traces.describe import describe, plot

    png, fmt = outputs.check_plot(args.plot, "--plot", _inputs(args), args.force) \
        if args.plot else (None, None)
    sess = _Session(args)
    out = {"trace": sess.trace.name, **describe(sess.trace)}
    if png is not None:
        outputs.write_file(png, lambda tmp: plot(sess.trace, str(tmp), fmt))
        print(f"wrote {png}", file=sys.stderr)
    if args.json:
        print(json.dumps(out))
        return 0
    from stratus.app.report import table

    rows = []
    for k, v in out.items():
        if isinstance(v, dict):
            rows += [(f"{k}.{kk}", vv) for kk, vv in v.items() if not isinstance(vv, (dict, list))]
        elif not isinstance(v, list):
            rows.append((k, v))
    print(table(("field", "value"), rows, align_left=2))
    return 0


def _traces_formats(args) -> int:
    from traces.loaders import FORMATS

    if args.json:
        print(json.dumps({k: v[1] for k, v in FORMATS.items()}))
    else:
        from stratus.app.report import table

        print(table(("format", "reads"), [(k, v[1]) for k, v in FORMATS.items()], align_left=2))
    return 0


def _app(module: str):
    import importlib

    return importlib.import_module(f"stratus.app.{module}")


def cmd_qos(args) -> int:
    from stratus.app.qos import command

    return command(args, _Session, _inputs)


COMMANDS = {"replay": cmd_replay, "compare": cmd_compare, "sensitivity": cmd_sensitivity,
            "analyze": cmd_analyze, "waiting": cmd_waiting, "advise": cmd_advise,
            "estimate": cmd_estimate, "sweep": lambda a: _app("sweep").cmd_sweep(a),
            "report": lambda a: _app("report_html").cmd_report(a),
            "share": lambda a: _app("share").cmd_share(a),
            "schedulers": cmd_schedulers, "catalogs": cmd_catalogs, "traces": cmd_traces,
            "qos": cmd_qos}


EXIT_USAGE, EXIT_BUG, EXIT_INTERRUPTED = 2, 70, 130


def main(argv: list[str] | None = None) -> int:
    """Run one command; the one error path. A user's error (a bad option, file, row,
    field; an unreadable or unwritable path; too little memory) is one line on stderr and
    exit 2; an interrupt is one line and exit 130; anything else is a bug in stratus, and
    its one line says so (exit 70). ``--debug`` adds the traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]

    def fail(code: int, line: str) -> int:
        if debug:
            import traceback

            traceback.print_exc()
        print(line, file=sys.stderr, flush=True)
        return code

    try:
        args = _build_parser().parse_args(argv)
        return COMMANDS[args.cmd](args)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except StratusError as exc:
        return fail(EXIT_USAGE, f"stratus: error: {exc}")
    except KeyboardInterrupt:
        return fail(EXIT_INTERRUPTED, "stratus: interrupted")
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a path the user named, unreadable or unwritable
        where = f"{exc.filename}: " if exc.filename else ""
        return fail(EXIT_USAGE, f"stratus: error: {where}{exc.strerror or exc}")
    except MemoryError:
        return fail(EXIT_USAGE, "stratus: error: out of memory; try a smaller trace, window "
                                "or scale")
    except Exception as exc:
        return fail(EXIT_BUG, f"stratus: internal error (a bug in stratus, please report it): "
                              f"{type(exc).__name__}: {exc}"
                              + ("" if debug else " (rerun with --debug for the traceback)"))


def entry() -> None:
    """The console script: ``main``, then leave without tearing the interpreter down. A
    replay leaves millions of small objects behind, and freeing them one by one at exit
    took up to 1.8 s on a real-sized day for nothing (output is flushed first)."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)


if __name__ == "__main__":
    entry()
