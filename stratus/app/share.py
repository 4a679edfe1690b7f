"""``stratus share simulate|sweep|defect|solo``: paper 004's shared cloud cluster on a trace
(spec B.13). The numbers come from stratus.sharing; this module reads options, loads the
trace, prints and plots."""

from __future__ import annotations

import json
import math
import sys

from stratus.errors import ConfigError

DEFAULT_GRID = "0:160:8"
DEFAULT_THETAS = "1,2,5,10,15,20,30,50,100,1000,inf"
DEFAULT_KS = "0,1,2,4,8,16,32,64"


def _cluster(args, mode: str, policy: str | None = None, reserved: int = 0):
    from stratus.sharing.cluster import Cluster

    od = args.od_sizing
    if od == "auto":
        od = "exact" if mode == "pool" else "m5"
    return Cluster(policy=policy or args.policy, reserved=reserved, mode=mode, vm=args.vm,
                   vm_cores=args.vm_cores, ratio=args.reserved_ratio, od_sizing=od, b=args.b,
                   t=args.t, short_jobs=args.short_jobs, placement=args.placement)


def _floats(text: str, option: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        vals = []
    if not vals or any(math.isnan(v) or v < 0 for v in vals):
        raise ConfigError(f"{option} takes comma-separated numbers >= 0 (inf allowed), "
                          f"got {text!r}")
    return sorted(set(vals))


def _reserved_or_optimal(text: str) -> int | None:
    if text.strip().lower() == "optimal":
        return None
    try:
        n = int(text)
    except ValueError:
        n = -1
    if not 0 <= n <= 1_000_000:
        raise ConfigError(f"--reserved takes a whole number from 0 to 1,000,000 or "
                          f"'optimal', got {text!r}")
    return n


def _check(args) -> dict:
    """Every option checked before the trace is read."""
    from stratus.sharing.analyses import parse_grid
    from stratus.sharing.chargeback import PRICINGS

    out: dict = {}
    if args.mode not in ("auto", "pool", "node"):
        raise ConfigError(f"--mode takes auto, pool or node, got {args.mode!r}")
    if args.od_sizing not in ("auto", "exact", "m5"):
        raise ConfigError(f"--od-sizing takes auto, exact or m5, got {args.od_sizing!r}")
    if args.pricing not in PRICINGS:
        raise ConfigError(f"--pricing takes socialist or capitalist, got {args.pricing!r}")
    if getattr(args, "wait_metric", "ratio-of-means") not in ("ratio-of-means", "mean-of-ratios"):
        raise ConfigError(f"--wait-metric takes ratio-of-means or mean-of-ratios, got "
                          f"{args.wait_metric!r}")
    for mode in ("pool", "node") if args.mode == "auto" else (args.mode,):
        _cluster(args, mode)
    cmd = args.share_cmd
    steady = getattr(args, "steady_state", 0.0)
    if not 0 <= steady < 0.5:
        raise ConfigError(f"--steady-state takes a fraction in [0, 0.5), got {steady}")
    if cmd == "simulate":
        out["reserved"] = _reserved_or_optimal(args.reserved)
    if cmd == "sweep":
        from stratus.sharing.cluster import POLICIES

        pols = [p.strip() for p in args.policies.split(",") if p.strip()]
        bad = [p for p in pols if p not in POLICIES]
        if not pols or bad or len(set(pols)) != len(pols):
            raise ConfigError(f"--policies takes distinct names among {', '.join(POLICIES)}, "
                              f"got {args.policies!r}")
        out["policies"] = pols
        out["grid"] = parse_grid(args.reserved)
        if not 1 <= args.periods <= 100:
            raise ConfigError(f"--periods takes a whole number from 1 to 100, got "
                              f"{args.periods}")
    else:
        out["grid"] = parse_grid(args.grid, "--grid")
    if cmd in ("defect", "solo"):
        out["reserved"] = _reserved_or_optimal(args.reserved)
    if cmd == "defect":
        out["thetas"] = _floats(args.thetas, "--thetas")
    if cmd == "solo":
        ks = _floats(args.ks, "--ks")
        if any(not k.is_integer() or k > 1_000_000 for k in ks):
            raise ConfigError(f"--ks takes whole numbers from 0 to 1,000,000, got {args.ks!r}")
        out["ks"] = [int(k) for k in ks]
        if args.burst_jobs < 1:
            raise ConfigError(f"--burst-jobs takes a whole number >= 1, got {args.burst_jobs}")
    return out


def _mode(args, trace) -> str:
    if args.mode != "auto":
        return args.mode
    return "pool" if trace.meta.get("format") == "swf" else "node"  # spec B.1


def cmd_share(args, session, inputs) -> int:
    """``stratus share ...``; ``session(args)`` loads the window, ``inputs(args)`` names
    what the command reads (an output may not replace it)."""
    import numpy as np

    from stratus.app import outputs
    from stratus.sharing.analyses import defect, optimal_reserved, solo, sweep
    from stratus.sharing.chargeback import per_user
    from stratus.sharing.cluster import run, summary, workload_from_frame

    opts = _check(args)
    # the format is the extension's (png, svg, pdf); the temporary name keeps it
    png = outputs.check_plot(args.plot, "--plot", inputs(args), args.force)[0] \
        if args.plot else None
    save = outputs.check_dir(args.save, "--save", inputs(args), args.force) \
        if getattr(args, "save", None) else None
    sess = session(args)
    w = workload_from_frame(sess.trace.frame, sess.trace.name)
    mode = _mode(args, sess.trace)
    base = _cluster(args, mode)
    cmd = args.share_cmd
    head = {"trace": sess.trace.name, "jobs": w.n, "users": len(w.users), "mode": mode,
            "ratio": base.ratio, "od_sizing": base.od_sizing}

    def reserved() -> tuple[int, bool]:
        n = opts.get("reserved")
        return (optimal_reserved(w, base, opts["grid"]), True) if n is None else (n, False)

    extra = None
    if cmd == "simulate":
        n, opt = reserved()
        sr = run(w, base.with_reserved(n))
        if args.strict and sr.never_fit.any():
            j = int(np.flatnonzero(sr.never_fit)[0])
            raise ConfigError(f"--strict: {int(sr.never_fit.sum())} jobs can never fit the "
                              f"reserved capacity at N = {n} (the first: job {w.job_id[j]}, "
                              f"{w.cpu[j]:g} cores)")
        users, note = per_user(sr, args.pricing, args.wait_metric)
        doc = {**head, **summary(sr, args.steady_state), "reserved_optimal": opt,
               "pricing": args.pricing,
               "charges_total": round(sum(u["charge"] for u in users), 6),
               "note": note, "per_user": users}
        extra = sr
    elif cmd == "sweep":
        doc = {**head, **sweep(w, base, opts["policies"], opts["grid"], args.steady_state)}
        if args.periods > 1:
            from stratus.sharing.analyses import periods

            doc["periods"] = periods(w, base, opts["policies"], opts["grid"], args.periods)
    elif cmd == "defect":
        n, opt = reserved()
        doc = {**head, "reserved_optimal": opt,
               **defect(w, base.with_reserved(n), opts["thetas"], args.pricing,
                        args.defect_on_price, args.wait_metric)}
    else:
        n, opt = reserved()
        doc = {**head, "reserved_optimal": opt,
               **solo(w, base, opts["ks"], args.burst_jobs, base.with_reserved(n),
                      args.pricing)}
    if png is not None:
        from stratus.app import share_plots

        draw = {"simulate": lambda p: share_plots.plot_simulate(doc, extra, p),
                "sweep": lambda p: share_plots.plot_sweep(doc, p),
                "defect": lambda p: share_plots.plot_defect(doc, p),
                "solo": lambda p: share_plots.plot_solo(doc, p)}[cmd]
        outputs.write_file(png, draw)
        print(f"wrote {png}", file=sys.stderr)
    if save is not None:
        frame = jobs_frame(extra)
        outputs.write_dir(save, {"jobs.parquet": frame.to_parquet})
        print(f"wrote {save}/jobs.parquet", file=sys.stderr)
    if args.json:
        print(json.dumps(doc))
    else:
        print(_text(cmd, doc))
    return 0


def jobs_frame(sr):
    """Per job (``simulate --save``): where it ran, start, wait, OD_j and its charge."""
    import numpy as np
    import pandas as pd

    from stratus.sharing.chargeback import job_charges

    w = sr.workload
    return pd.DataFrame({
        "job_id": w.job_id, "user": np.array(w.users, dtype=object)[w.user],
        "submit_s": w.submit, "runtime_s": w.runtime, "cpu": w.cpu,
        "ondemand": sr.ondemand, "never_fit": sr.never_fit, "start_s": sr.start,
        "wait_s": sr.wait, "od_cost": sr.od_cost,
        "charge_socialist": job_charges(sr, "socialist"),
        "charge_capitalist": job_charges(sr, "capitalist")})


def _text(cmd: str, doc: dict) -> str:
    from stratus.app.report import table

    if cmd == "simulate":
        rows = [(k, v) for k, v in doc.items() if not isinstance(v, (list, dict))]
        top = sorted(doc["per_user"], key=lambda u: -u["od_equiv"])[:15]
        return (table(("field", "value"), rows, align_left=2) + "\n\n" +
                table(("user", "jobs", "OD equiv $", "charge $", "price", "mean wait s",
                       "wait/rt"),
                      [(u["user"], u["jobs"], u["od_equiv"], u["charge"], u["price"],
                        u["mean_wait_s"], u["wait_ratio"]) for u in top]))
    if cmd == "sweep":
        pols = [p["policy"] for p in doc["policies"]]
        rows = []
        for i, n in enumerate(doc["grid"]):
            row = [n]
            for p in doc["policies"]:
                q = p["points"][i]
                row += [q["normalized_price"], q["mean_wait_s"] / 3600.0]
            rows.append(row)
        heads = ["N"] + [f"{p} {x}" for p in pols for x in ("π", "wait h")]
        extra = []
        for per in doc.get("periods", []):
            at = per.get("at_previous_optimum", {})
            extra.append(f"\nperiod {per['period']} ({per['jobs']} jobs):\n" + table(
                ("policy", "N*", "π(N*)", "previous N*", "π(previous N*)"),
                [(p, v["reserved"], v["normalized_price"], at.get(p, {}).get("reserved"),
                  at.get(p, {}).get("normalized_price")) for p, v in per["optimal"].items()]))
        opt = "\n".join(f"N* {p}: {v['reserved']} (π {v['normalized_price']:.4f}, mean wait "
                        f"{v['mean_wait_s'] / 3600:.2f} h)" for p, v in doc["optimal"].items())
        return table(heads, rows) + "\n" + opt + "".join(extra)
    if cmd == "defect":
        rows = [("inf" if t["theta_inf"] else t["theta"], t["participation"], t["users_left"],
                 t["normalized_price"], t["rounds"]) for t in doc["thetas"]]
        return (f"{doc['policy']} at N = {doc['reserved']}, {doc['pricing']}; no-defection "
                f"π = {doc['no_defection_price']}\n" +
                table(("θ", "participation", "users", "π", "rounds"), rows))
    rows = [(u["user"], u["jobs"], u["k_star"], u["price"], u["mean_wait_s"], u["class"],
             u.get("shared_price"), u.get("shared_mean_wait_s")) for u in doc["per_user"]]
    return (table(("user", "jobs", "k*", "π solo", "wait solo s", "class", "π shared",
                   "wait shared s"), rows) +
            f"\nclasses: {doc['classes']}; lower wait solo: "
            f"{doc.get('share_lower_wait_solo')}, lower price solo: "
            f"{doc.get('share_lower_price_solo')}")
