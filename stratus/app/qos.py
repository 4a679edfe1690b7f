"""``stratus qos run|sweep``: deadline admission control of paper 001 (QoPS, VQoPS,
DVQoPS; spec ``qos-and-sharing.md`` A.1-A.12) on a trace of rigid parallel jobs."""

from __future__ import annotations

import argparse
import json
import math
import sys

from stratus.errors import ConfigError

SCHEMES = ("qops", "vqops", "dvqops")


# --- option parsing (all checked before the trace is read) -------------------------------


def _floats(text: str, option: str, lo: float = 0.0, above: bool = False) -> tuple[float, ...]:
    out = []
    for tok in str(text).split(","):
        try:
            v = float(tok)
        except ValueError:
            v = None
        if v is None or not math.isfinite(v) or (v <= lo if above else v < lo):
            raise ConfigError(f"{option} takes comma-separated numbers {'>' if above else '>='}"
                              f" {lo:g}, got {tok!r} in {text!r}")
        out.append(v)
    if len(set(out)) != len(out):
        raise ConfigError(f"{option}: {text!r} repeats a value")
    return tuple(out)


def _choice(value: str, option: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConfigError(f"{option} takes {', '.join(allowed)}, got {value!r}")
    return value


def _fraction(v: float, option: str) -> float:
    if not (math.isfinite(v) and 0.0 <= v <= 1.0):
        raise ConfigError(f"{option} takes a fraction in [0, 1], got {v}")
    return v


def check_workload_options(args) -> None:
    _choice(args.estimates, "--estimates", ("exact", "trace"))
    _choice(args.overrun, "--overrun", ("kill", "extend"))
    _choice(args.charge_basis, "--charge-basis", ("actual", "estimate"))
    _choice(args.deadline_basis, "--deadline-basis", ("estimate", "requested"))
    if not (math.isfinite(args.slack_factor) and args.slack_factor >= 1):
        raise ConfigError(f"--slack-factor takes a number >= 1, got {args.slack_factor}")
    if not (math.isfinite(args.base_rate) and args.base_rate > 0):
        raise ConfigError(f"--base-rate takes a positive number, got {args.base_rate}")
    if args.processors is not None and not (1 <= args.processors <= 10**7):
        raise ConfigError(f"--processors takes an integer in [1, 1e7], got {args.processors}")
    if args.first_jobs is not None and args.first_jobs < 1:
        raise ConfigError(f"--first-jobs takes a positive integer, got {args.first_jobs}")
    if args.skip < 0:
        raise ConfigError(f"--skip takes an integer >= 0, got {args.skip}")


def check_scheme_options(args) -> dict:
    """The Config keywords shared by run and sweep (not scheme/oc)."""
    if not (0 <= args.qops_k <= 1000):
        raise ConfigError(f"--qops-k takes an integer in [0, 1000], got {args.qops_k}")
    _choice(args.oc_tie, "--oc-tie", ("reject", "accept"))
    _choice(args.whatif_start, "--whatif-start", ("snapshot", "empty"))
    _choice(args.dv_replay, "--dv-replay", ("nested", "tiling"))
    grid = _floats(args.dv_oc_grid, "--dv-oc-grid")
    windows = _floats(args.dv_windows, "--dv-windows", above=True)
    if not (math.isfinite(args.dv_wmax) and 0 < args.dv_wmax <= 24 * 365):
        raise ConfigError(f"--dv-wmax takes hours in (0, 8760], got {args.dv_wmax}")
    if max(windows) > args.dv_wmax:
        raise ConfigError(f"--dv-windows: {max(windows):g} h exceeds --dv-wmax "
                          f"{args.dv_wmax:g} h")
    window, w_init = parse_window(args.dv_window)
    return dict(K=args.qops_k, oc_tie=args.oc_tie, oc_grid=grid, windows_h=windows,
                wmax_h=args.dv_wmax, window=window, w_init_h=w_init,
                whatif_start=args.whatif_start, replay=args.dv_replay)


def parse_window(text: str) -> tuple[str, float]:
    if text == "auto":
        return "auto", 16.0  # W_init = 16 h (spec A.5 decision)
    if text.startswith("fixed:"):
        w = _floats(text[6:], "--dv-window fixed:H", above=True)
        if len(w) == 1 and w[0] <= 24 * 365:
            return "fixed", w[0]
    raise ConfigError(f"--dv-window takes auto or fixed:H (hours in (0, 8760]), got {text!r}")


# --- the workload ------------------------------------------------------------------------


def processors_of(trace, args) -> int:
    if args.processors is not None:
        return int(args.processors)
    header = trace.meta.get("swf_header") or {}
    for key in ("MaxProcs", "MaxNodes"):
        v = header.get(key)
        if isinstance(v, int) and v > 0:
            return v
    raise ConfigError(f"{trace.name}: no processor count in the trace (SWF header MaxProcs); "
                      "give --processors")


def jobs_of(trace, args):
    """Rigid jobs from the canonical per-task frame: submit = the first task's, runtime the
    longest task's, processors = ⌈Σ cpu⌉ (an SWF job: its processors; per_processor=1 or a
    multi-task job: one processor per vCPU), requested time = the job's estimate if every
    job has one. --skip/--first-jobs pick consecutive jobs in (submit, id) order."""
    import numpy as np

    f = trace.frame
    has_req = "estimate_s" in f.columns
    agg = {"submit_s": ("submit_s", "min"), "runtime_s": ("runtime_s", "max"),
           "cpu": ("cpu", "sum")}
    if has_req:
        agg["req"] = ("estimate_s", "max")
    g = f.groupby("job_id", sort=False).agg(**agg).reset_index()
    g = g.sort_values(["submit_s", "job_id"], kind="stable").reset_index(drop=True)
    end = None if args.first_jobs is None else args.skip + args.first_jobs
    g = g.iloc[args.skip:end]
    if not len(g):
        raise ConfigError(f"--skip {args.skip}: {trace.name} has only {len(f)} jobs")
    procs = np.ceil(g["cpu"].to_numpy(np.float64) - 1e-9)
    return (g["submit_s"].to_numpy(np.float64), g["runtime_s"].to_numpy(np.float64), procs,
            g["req"].to_numpy(np.float64) if has_req else None,
            g["job_id"].to_numpy(np.int64))


def workload(trace, args, *, dup_frac: float, urgent_frac: float, urgent_cost: float):
    from stratus.qos.jobs import build_workload

    submit, runtime, procs, req, ids = jobs_of(trace, args)
    return build_workload(submit, runtime, procs, req, ids, P=processors_of(trace, args),
                          estimates=args.estimates, overrun=args.overrun,
                          slack=args.slack_factor, dup_frac=dup_frac, urgent_frac=urgent_frac,
                          urgent_cost=urgent_cost, base_rate=args.base_rate,
                          charge_basis=args.charge_basis, deadline_basis=args.deadline_basis,
                          dup_copies_urgency=args.dup_copies_urgency, seed=args.seed,
                          source=trace.name)


def _workload_doc(wl, args, trace) -> dict:
    return {"trace": trace.name, **wl.info, "estimates": args.estimates,
            "overrun": args.overrun, "slack_factor": args.slack_factor,
            "base_rate": args.base_rate, "charge_basis": args.charge_basis,
            "deadline_basis": args.deadline_basis, "seed": args.seed}


# --- run ---------------------------------------------------------------------------------


def check_run(args) -> dict:
    check_workload_options(args)
    _choice(args.scheme, "--scheme", SCHEMES)
    if not (math.isfinite(args.oc) and args.oc >= 0):
        raise ConfigError(f"--oc takes a number >= 0, got {args.oc}")
    _fraction(args.urgent_frac, "--urgent-frac")
    if not (math.isfinite(args.urgent_cost) and args.urgent_cost > 0):
        raise ConfigError(f"--urgent-cost takes a positive number, got {args.urgent_cost}")
    if not (math.isfinite(args.dup_frac) and 0 <= args.dup_frac <= 20):
        raise ConfigError(f"--dup-frac takes a number in [0, 20], got {args.dup_frac}")
    return check_scheme_options(args)


def run_one(trace, args, kw: dict):
    from stratus.qos.run import run
    from stratus.qos.sim import Config

    wl = workload(trace, args, dup_frac=args.dup_frac, urgent_frac=args.urgent_frac,
                  urgent_cost=args.urgent_cost)
    out = run(wl, Config(scheme=args.scheme, oc=args.oc, **kw))
    doc = {**out.summary, "urgent_frac": args.urgent_frac, "urgent_cost": args.urgent_cost,
           "dup_frac": args.dup_frac, "workload": _workload_doc(wl, args, trace)}
    return doc, out.jobs


def save_jobs(jobs: dict, out) -> None:
    import pandas as pd

    from stratus.app import outputs

    frame = pd.DataFrame(jobs)
    outputs.write_dir(out, {"jobs.parquet": lambda p: frame.to_parquet(p, index=False)})


RUN_FIELDS = ("scheme", "oc", "jobs", "offered_load", "accepted", "accepted_urgent",
              "accepted_normal", "revenue", "revenue_urgent", "revenue_normal",
              "deadline_violations", "overrun_killed", "dropped_oversize", "oc_var_avg",
              "load_var")


def print_run(doc: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(doc))
        return
    from stratus.app.report import table

    rows = [(k, doc.get(k)) for k in RUN_FIELDS if k in doc]
    if doc.get("window_trajectory"):
        rows.append(("W changes (h)", " ".join(f"{w:g}" for _, w in doc["window_trajectory"])))
        rows.append(("OC updates", len(doc["oc_trajectory"]) - 1))
    print(table(("field", "value"), rows, align_left=2))


# --- sweep -------------------------------------------------------------------------------


def check_sweep(args) -> dict:
    check_workload_options(args)
    schemes = tuple(s for s in str(args.schemes).split(","))
    for s in schemes:
        _choice(s, "--schemes", SCHEMES)
    if len(set(schemes)) != len(schemes):
        raise ConfigError(f"--schemes: {args.schemes!r} repeats a scheme")
    kw = check_scheme_options(args)
    axes = {"schemes": schemes,
            "ocs": _floats(args.ocs, "--ocs"),
            "urgent_fracs": _floats(args.urgent_fracs, "--urgent-fracs"),
            "urgent_costs": _floats(args.urgent_costs, "--urgent-costs", above=True),
            "dup_fracs": _floats(args.dup_fracs, "--dup-fracs"),
            "fixed_windows": (_floats(args.dv_fixed_windows, "--dv-fixed-windows", above=True)
                              if args.dv_fixed_windows else ())}
    for u in axes["urgent_fracs"]:
        _fraction(u, "--urgent-fracs")
    if max(axes["dup_fracs"]) > 20:
        raise ConfigError("--dup-fracs takes numbers in [0, 20]")
    n = len(axes["urgent_fracs"]) * len(axes["urgent_costs"]) * len(axes["dup_fracs"])
    per = (("qops" in schemes) + ("vqops" in schemes) * len(axes["ocs"])
           + ("dvqops" in schemes) * max(1, len(axes["fixed_windows"])))
    if n * per > 500:
        raise ConfigError(f"the sweep asks for {n * per} runs; at most 500")
    return {"kw": kw, "axes": axes}


def sweep(trace, args, plan: dict, progress=None) -> dict:
    """Every (load, mix) group on the same seeded workload: QoPS, VQoPS at each f, DVQoPS
    (auto W, or at each fixed W), with % revenue improvement over QoPS (001 Table 1,
    Fig. 5a, Table 2)."""
    from stratus.qos.run import run
    from stratus.qos.sim import Config

    kw, ax = plan["kw"], plan["axes"]
    runs = []
    wdoc = None
    for d in ax["dup_fracs"]:
        for u in ax["urgent_fracs"]:
            for c in ax["urgent_costs"]:
                wl = workload(trace, args, dup_frac=d, urgent_frac=u, urgent_cost=c)
                if wdoc is None:
                    wdoc = _workload_doc(wl, args, trace)
                cfgs = []
                if "qops" in ax["schemes"]:
                    cfgs.append(Config(scheme="qops", **kw))
                if "vqops" in ax["schemes"]:
                    cfgs += [Config(scheme="vqops", oc=f, **kw) for f in ax["ocs"]]
                if "dvqops" in ax["schemes"]:
                    if ax["fixed_windows"]:
                        cfgs += [Config(scheme="dvqops", **{**kw, "window": "fixed",
                                                            "w_init_h": w})
                                 for w in ax["fixed_windows"]]
                    else:
                        cfgs.append(Config(scheme="dvqops", **kw))
                group = []
                for cfg in cfgs:
                    s = run(wl, cfg).summary
                    s.update(dup_frac=d, urgent_frac=u, urgent_cost=c)
                    group.append(s)
                    if progress:
                        progress(s)
                base = next((g["revenue"] for g in group if g["scheme"] == "qops"), None)
                for g in group:
                    g["improvement_pct"] = (round(100.0 * (g["revenue"] - base) / base, 4)
                                            if base else None)
                runs += group
    return {"workload": wdoc, "axes": {k: list(v) for k, v in ax.items()}, "runs": runs}


def label(run: dict) -> str:
    if run["scheme"] == "vqops":
        return f"vqops f={run['oc']:g}"
    if run["scheme"] == "dvqops":
        return f"dvqops W={run['dv_window']}"
    return run["scheme"]


def print_sweep(doc: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(doc))
        return
    from stratus.app.report import table

    rows = []
    for r in doc["runs"]:
        rows.append((f"{r['dup_frac']:g}", f"{r['offered_load']:.3f}",
                     f"{100 * r['urgent_frac']:g}%", f"{r['urgent_cost']:g}X", label(r),
                     f"{r['revenue']:.4g}",
                     "" if r["improvement_pct"] is None else f"{r['improvement_pct']:+.1f}%",
                     r["accepted"], r["accepted_urgent"], r["accepted_normal"],
                     r["deadline_violations"], r.get("load_var", "")))
    print(table(("dup", "load", "U", "C", "scheme", "revenue", "vs QoPS", "accepted",
                 "urgent", "normal", "violations", "load_var"), rows, align_left=5))


def progress_line(s: dict) -> None:
    print(f"qos sweep: d={s['dup_frac']:g} U={s['urgent_frac']:g} C={s['urgent_cost']:g} "
          f"{label(s)}: revenue {s['revenue']:.6g}", file=sys.stderr, flush=True)


# --- the command line --------------------------------------------------------------------


def _workload_options(p: argparse.ArgumentParser, number) -> None:
    p.add_argument("--trace", required=True, help="a trace file (SWF) or synthetic:NAME[?...]")
    p.add_argument("--processors", type=number("an integer", 1, integer=True), default=None,
                   metavar="P", help="machine size (default: the SWF header's MaxProcs)")
    p.add_argument("--first-jobs", type=number("an integer", 1, integer=True), default=None,
                   metavar="N", help="only N consecutive jobs (in submit order) ...")
    p.add_argument("--skip", type=number("an integer", 0, integer=True), default=0,
                   metavar="M", help="... after skipping the first M")
    p.add_argument("--estimates", default="exact",
                   help="exact (e = runtime) or trace (e = requested time, SWF field 9)")
    p.add_argument("--overrun", default="kill",
                   help="trace estimates below the runtime: kill at the estimate (default) "
                        "or extend the estimate")
    p.add_argument("--slack-factor", type=float, default=5.0,
                   help="deadline = submit + SF x estimate (001 §3: 5)")
    p.add_argument("--base-rate", type=float, default=0.1,
                   help="price per processor-second of a normal job (001 §3: 0.1)")
    p.add_argument("--charge-basis", default="actual",
                   help="Vmax on the actual runtime (default) or the estimate")
    p.add_argument("--deadline-basis", default="estimate",
                   help="deadline from the estimate (default) or the requested time")
    p.add_argument("--dup-copies-urgency", action="store_true",
                   help="copies inherit their original's urgency (default: marked anew)")
    p.add_argument("--qops-k", type=number("an integer", 0, integer=True), default=5,
                   help="QoPS K-factor: queued jobs that may be promoted ahead (5)")
    p.add_argument("--oc-tie", default="reject",
                   help="VQoPS at gain = f x size: reject (strict, default) or accept")
    p.add_argument("--dv-oc-grid", default="0,0.05,0.1,0.2,0.4",
                   help="DVQoPS candidate OC-factors")
    p.add_argument("--dv-windows", default="1,2,4,8,16,32,64",
                   help="DVQoPS candidate rollback windows, hours")
    p.add_argument("--dv-wmax", type=float, default=64.0, help="DVQoPS W_max, hours (64)")
    p.add_argument("--dv-window", default="auto",
                   help="auto (window updates every W_max) or fixed:H")
    p.add_argument("--dv-replay", default="nested",
                   help="window update: nested DVQoPS replays (default) or tiling")
    p.add_argument("--whatif-start", default="snapshot",
                   help="what-ifs start from the real schedule's snapshot (default) or empty")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def add_parsers(sub, add_trace_options, number) -> None:
    """``stratus qos run|sweep`` (cli.py calls this and dispatches to ``command``)."""
    qs = sub.add_parser("qos", help="deadline admission control: QoPS, VQoPS, DVQoPS "
                                    "(paper 001)").add_subparsers(dest="qos_cmd", required=True)
    p = qs.add_parser("run", help="one scheme on a trace: revenue, acceptance, deadlines")
    _workload_options(p, number)
    add_trace_options(p)
    p.add_argument("--scheme", default="vqops", help="qops, vqops (default) or dvqops")
    p.add_argument("--oc", type=float, default=0.0,
                   help="VQoPS OC-factor f (DVQoPS: the initial f; 0)")
    p.add_argument("--urgent-frac", type=float, default=0.5, metavar="U")
    p.add_argument("--urgent-cost", type=float, default=10.0, metavar="C")
    p.add_argument("--dup-frac", type=float, default=0.0, metavar="D",
                   help="duplicate each job with probability D (D > 1: floor(D) sure copies)")
    p.add_argument("--save", metavar="DIR", help="write the per-job table DIR/jobs.parquet")
    p.add_argument("--force", action="store_true", help="replace an earlier --save")
    p = qs.add_parser("sweep", help="schemes x OC-factors x mixes on one seeded workload, "
                                    "%% revenue improvement over QoPS (001 Table 1, 2)")
    _workload_options(p, number)
    add_trace_options(p)
    p.add_argument("--schemes", default="qops,vqops,dvqops")
    p.add_argument("--ocs", default="0,0.05,0.1,0.2,0.4", help="VQoPS OC-factors")
    p.add_argument("--urgent-fracs", default="0.5")
    p.add_argument("--urgent-costs", default="10")
    p.add_argument("--dup-fracs", default="0")
    p.add_argument("--dv-fixed-windows", default=None, metavar="H,...",
                   help="DVQoPS at each fixed window instead of auto (001 Table 2)")
    p.add_argument("--plot", metavar="OUT.png", help="draw the Table 1 / Table 2 shapes")
    p.add_argument("--force", action="store_true", help="replace an existing --plot file")


def command(args, session, inputs) -> int:
    from stratus.app import outputs

    if args.qos_cmd == "run":
        kw = check_run(args)
        save = (outputs.check_dir(args.save, "--save", inputs(args), args.force)
                if args.save else None)
        sess = session(args)
        doc, jobs = run_one(sess.trace, args, kw)
        if save is not None:
            save_jobs(jobs, save)
            print(f"wrote {save}/jobs.parquet", file=sys.stderr)
        print_run(doc, args.json)
        return 0
    plan = check_sweep(args)
    # the format is the extension's (png, svg, pdf); the temporary name keeps it
    png = outputs.check_plot(args.plot, "--plot", inputs(args), args.force)[0] \
        if args.plot else None
    sess = session(args)
    doc = sweep(sess.trace, args, plan, progress=None if args.json else progress_line)
    if png is not None:
        from stratus.app.qos_plots import plot_sweep

        outputs.write_file(png, lambda tmp: plot_sweep(doc, tmp))
        print(f"wrote {png}", file=sys.stderr)
    print_sweep(doc, args.json)
    return 0
