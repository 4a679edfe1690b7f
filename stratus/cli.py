"""The ``stratus`` command. Every subcommand that produces numbers takes ``--json`` and
then prints exactly one JSON document on stdout; progress and logs go to stderr."""

from __future__ import annotations

import argparse
import json
import sys

from stratus.errors import StratusError


def _add_replay_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", required=True, help="synthetic:NAME[?k=v&...] or a trace file")
    p.add_argument("--format", dest="fmt", help="trace file format (see `stratus traces --help`)")
    p.add_argument("--hours", type=float, help="length of the replayed window in hours")
    p.add_argument("--start", type=float, help="window start, seconds from the trace origin")
    p.add_argument("--seed", type=int, default=0, help="seed for workload, spin-up and estimator")
    p.add_argument("--tick", type=float, default=60.0, help="scheduling interval in seconds (60)")
    p.add_argument("--market", default="spot",
                   help="market for acquisitions: spot (default; bid = on-demand) or on-demand")
    p.add_argument("--spot-prices", metavar="FILE",
                   help="AWS spot price history (JSON, CSV/TSV, text); default: bundled m4 trace")
    p.add_argument("--spot-zone", help="availability zone to take from --spot-prices")
    p.add_argument("--spot-start", type=float, default=0.0,
                   help="seconds into the spot history that line up with trace time 0")
    p.add_argument("--estimator", default=None,
                   help="runtime estimator: oracle, noisy:H (default: the scheduler's, else oracle)")
    p.add_argument("--warmup-hours", type=float, default=24.0,
                   help="history a learning estimator trains on before the window (24)")
    p.add_argument("--catalog", default="m4", help="instance family: m4 (default) or m5")
    p.add_argument("--spinup", default="30,160", help="instance spin-up range LO,HI seconds")
    p.add_argument("--migration-mbps", type=float, default=160.0, help="migration rate, Mbit/s")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")


def _build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="stratus", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("replay", help="replay a trace under one scheduler")
    _add_replay_options(p)
    p.add_argument("--scheduler", default="task-per-instance", help="see `stratus schedulers`")
    p.add_argument("--save", metavar="DIR", help="also write instances/jobs tables as Parquet")
    p = sub.add_parser("compare", help="replay one trace under several schedulers")
    _add_replay_options(p)
    p.add_argument("--schedulers", default=None, help="comma-separated names (default: all)")
    p = sub.add_parser("estimate", help="error distribution of a runtime estimator on a trace")
    p.add_argument("--trace", required=True)
    p.add_argument("--format", dest="fmt")
    p.add_argument("--hours", type=float)
    p.add_argument("--start", type=float)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--estimator", default="history", help="oracle, noisy:H or history (default)")
    p.add_argument("--warmup-hours", type=float, default=24.0)
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("schedulers", help="list the registered schedulers")
    p.add_argument("--json", action="store_true")
    return ap


def _spinup(text: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise StratusError(f"--spinup takes LO,HI in seconds, got {text!r}") from None
    return lo, hi


def _config(args, scheduler_name: str, label: str):
    from pricing.catalog import get_catalog
    from stratus.engine import ReplayConfig
    from stratus.progress import ProgressBar
    from stratus.registry import get_spec

    spec = get_spec(scheduler_name)
    cfg = ReplayConfig(
        tick_s=args.tick, spinup_s=_spinup(args.spinup), migration_mbps=args.migration_mbps,
        seed=args.seed, catalog=get_catalog(args.catalog),
        estimator=args.estimator or spec.estimator or "oracle",
    )
    from stratus.markets import configure_market

    configure_market(cfg, args.market, args.spot_prices, args.spot_zone, args.spot_start)
    if not args.no_progress and ProgressBar.wanted():
        cfg.progress = ProgressBar(label)
    return spec, cfg


def _load(args):
    from traces.spec import load_trace

    return load_trace(args.trace, fmt=args.fmt, hours=args.hours, start=args.start, seed=args.seed)


_HISTORY: dict = {}


def _history(args):
    """The warm-up jobs for learning estimators, loaded once per command."""
    if "h" not in _HISTORY:
        from traces.spec import load_history

        _HISTORY["h"] = load_history(args.trace, fmt=args.fmt, start=args.start,
                                     hours=args.warmup_hours, seed=args.seed)
    return _HISTORY["h"]


def _run_one(trace, args, name: str):
    from stratus.engine import Engine
    from stratus.estimators import make_estimator

    spec, cfg = _config(args, name, name)
    est = make_estimator(cfg.estimator, cfg.seed)
    if est.learns_online and args.warmup_hours > 0:
        hist = _history(args)
        if hist is not None:
            est.fit(hist)
    cfg.estimator = est
    return Engine(trace, spec.factory(), cfg).run()


def cmd_replay(args) -> int:
    trace = _load(args)
    res = _run_one(trace, args, args.scheduler)
    if args.save:
        from pathlib import Path

        out = Path(args.save)
        out.mkdir(parents=True, exist_ok=True)
        res.instances.to_parquet(out / "instances.parquet")
        res.jobs.to_parquet(out / "jobs.parquet")
        print(f"wrote {out}/instances.parquet and jobs.parquet", file=sys.stderr)
    if args.json:
        print(res.to_json())
    else:
        from stratus.report import summary_table

        print(summary_table(res.summary))
    return 0


def cmd_compare(args) -> int:
    from stratus.registry import scheduler_names
    from stratus.report import comparison_table

    names = args.schedulers.split(",") if args.schedulers else scheduler_names()
    trace = _load(args)
    if not args.json:
        print(f"trace {trace.name}: {trace.n_tasks:,} tasks, {trace.n_jobs:,} jobs", file=sys.stderr)
    runs = [_run_one(trace, args, n.strip()).summary for n in names]
    if args.json:
        print(json.dumps({"trace": trace.name, "runs": runs}))
    else:
        print(comparison_table(runs))
    return 0


def cmd_estimate(args) -> int:
    """Jobs in time order: predicted at submit, learned from at their end (no scheduling)."""
    from stratus.estimators import error_distribution, make_estimator, online_pass

    trace = _load(args)
    est = make_estimator(args.estimator, args.seed)
    est.bind(trace)
    if est.learns_online and args.warmup_hours > 0:
        hist = _history(args)
        if hist is not None:
            est.fit(hist)
    out = {"trace": trace.name, "estimator": est.name,
           "warmup_jobs": getattr(est, "warmup_jobs", 0),
           **error_distribution(online_pass(est, trace.frame))}
    if args.json:
        print(json.dumps(out))
    else:
        from stratus.report import table

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
    from stratus.registry import get_spec, scheduler_names

    specs = [get_spec(n) for n in scheduler_names()]
    if args.json:
        print(json.dumps([{"name": s.name, "description": s.description, "estimator": s.estimator}
                          for s in specs]))
    else:
        from stratus.report import table

        print(table(("name", "estimator", "description"),
                    [(s.name, s.estimator or "(replay's)", s.description) for s in specs],
                    align_left=3))
    return 0


COMMANDS = {"replay": cmd_replay, "compare": cmd_compare, "estimate": cmd_estimate,
            "schedulers": cmd_schedulers}


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    _HISTORY.clear()
    try:
        return COMMANDS[args.cmd](args)
    except StratusError as exc:
        print(f"stratus: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stratus: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
