"""``stratus share simulate|sweep|defect|solo``: paper 004's shared cloud cluster on a trace
(spec B.13). The numbers come from stratus.sharing; this module runs a spec on a trace and
draws or prints the result."""

from __future__ import annotations

from stratus.app.spec.share import (
    ShareDefectSpec,
    ShareOptions,
    ShareSimulateSpec,
    ShareSweepSpec,
    floats,
)
from stratus.base.errors import ConfigError


def share_doc(spec: ShareOptions, trace):
    """(the document ``stratus share CMD --json`` prints, the simulate run or None) for
    ``spec`` on ``trace``."""
    import numpy as np

    from stratus.sharing.analyses import defect, optimal_reserved, parse_grid, solo, sweep
    from stratus.sharing.chargeback import per_user
    from stratus.sharing.cluster import run, summary, workload_from_frame

    w = workload_from_frame(trace.frame, trace.name)
    mode = spec.mode_for(trace)
    base = spec.cluster(mode)
    head = {"trace": trace.name, "jobs": w.n, "users": len(w.users), "mode": mode,
            "ratio": base.ratio, "od_sizing": base.od_sizing}

    def reserved() -> tuple[int, bool]:
        n = spec.reserved
        if n == "optimal":
            return optimal_reserved(w, base, parse_grid(spec.grid, "--grid")), True
        return n, False

    extra = None
    if isinstance(spec, ShareSimulateSpec):
        n, opt = reserved()
        sr = run(w, base.with_reserved(n))
        if spec.strict and sr.never_fit.any():
            j = int(np.flatnonzero(sr.never_fit)[0])
            raise ConfigError(f"--strict: {int(sr.never_fit.sum())} jobs can never fit the "
                              f"reserved capacity at N = {n} (the first: job {w.job_label(j)}, "
                              f"{w.cpu[j]:g} cores)")
        users, note = per_user(sr, spec.pricing, spec.wait_metric)
        doc = {**head, **summary(sr, spec.steady_state), "reserved_optimal": opt,
               "pricing": spec.pricing,
               "charges_total": round(sum(u["charge"] for u in users), 6),
               "note": note, "per_user": users}
        extra = sr
    elif isinstance(spec, ShareSweepSpec):
        pols, grid = spec.policies.split(","), parse_grid(spec.reserved)
        doc = {**head, **sweep(w, base, pols, grid, spec.steady_state)}
        if spec.periods > 1:
            from stratus.sharing.analyses import periods

            doc["periods"] = periods(w, base, pols, grid, spec.periods)
    elif isinstance(spec, ShareDefectSpec):
        n, opt = reserved()
        doc = {**head, "reserved_optimal": opt,
               **defect(w, base.with_reserved(n), floats(spec.thetas, "--thetas"),
                        spec.pricing, spec.defect_on_price, spec.wait_metric)}
    else:
        n, opt = reserved()
        doc = {**head, "reserved_optimal": opt,
               **solo(w, base, [int(k) for k in floats(spec.ks, "--ks")], spec.burst_jobs,
                      base.with_reserved(n), spec.pricing)}
    return doc, extra


def plot(cmd: str, doc: dict, extra, path) -> None:
    from stratus.app import share_plots

    {"simulate": lambda p: share_plots.plot_simulate(doc, extra, p),
     "sweep": lambda p: share_plots.plot_sweep(doc, p),
     "defect": lambda p: share_plots.plot_defect(doc, p),
     "solo": lambda p: share_plots.plot_solo(doc, p)}[cmd](path)


def jobs_frame(sr):
    """Per job (``simulate --save``): where it ran, start, wait, OD_j and its charge."""
    import numpy as np
    import pandas as pd

    from stratus.sharing.chargeback import job_charges

    w = sr.workload
    ids = {"job_id": w.job_id}
    if w.source_job_id is not None:  # the source's own ids (traces/schema.py), beside ours
        ids["source_job_id"] = w.source_job_id
    return pd.DataFrame({
        **ids, "user": np.array(w.users, dtype=object)[w.user],
        "submit_s": w.submit, "runtime_s": w.runtime, "cpu": w.cpu,
        "ondemand": sr.ondemand, "never_fit": sr.never_fit, "start_s": sr.start,
        "wait_s": sr.wait, "od_cost": sr.od_cost,
        "charge_socialist": job_charges(sr, "socialist"),
        "charge_capitalist": job_charges(sr, "capitalist")})


def text(cmd: str, doc: dict) -> str:
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
