"""The report's waiting-policy figures (papers 000, 003): price, wait and opportunity cost
against the reserved servers s, with the M/M/s model's curves (000 Figs. 13, 16); and the
total bill against reserved capacity, the two-stage pipeline (``waiting`` cells) beside the
unified replay (``replay`` cells with ``--reserved`` and ``--waiting``; issue 23 item 6)."""

from __future__ import annotations

import json

from stratus.app.figures import Figure, _fmt, _opt, _stat, what_ran
from stratus.app.report_groups import window_key


def waiting_figures(df) -> list[Figure]:
    """Price, wait and opportunity cost against s per policy (000 Figs. 13 and 16), with the
    queueing model's curves (000 §3-4) where the trace is the M/M/s one it models."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    w = df[df["command"] == "waiting"].copy()
    if w.empty:
        return []
    w["policy"] = _opt(w, "policy", "?")
    w["s"] = _opt(w, "reserved", None).astype(float)
    figs = []
    for label, g in w.groupby("trace_label", sort=False):
        model = _model_curves(g)
        rows = []
        series = {}
        for pol, gp in g.groupby("policy", sort=False):
            pts = []
            for s, gs in sorted(gp.groupby("s")):
                st = {k: _stat(gs[k].astype(float)) for k in
                      ("normalized_price", "mean_wait_s", "opportunity_cost")}
                pts.append((s, st))
                m = model.get((pol, s), {})
                rows.append({"policy": pol, "s": int(s),
                             "normalized price": _fmt(st["normalized_price"]),
                             "model price": _r(m.get("normalized_price")),
                             "mean wait s": _fmt(st["mean_wait_s"], 1),
                             "model wait s": _r(m.get("wait_s"), 1),
                             "opportunity cost": _fmt(st["opportunity_cost"], 2),
                             "on-demand share": _fmt(_stat(gs["on_demand_fraction"]))})
            series[pol] = pts

        def draw(path, sr=series, md=model, label=label):
            fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
            keys = ("normalized_price", "mean_wait_s", "opportunity_cost")
            cmap = plt.get_cmap("tab10")
            for i, (pol, pts) in enumerate(sr.items()):
                for ax, k in zip(axes, keys):
                    xs = [s for s, st in pts if st[k]["mean"] is not None]
                    ys = [st[k]["mean"] for s, st in pts if st[k]["mean"] is not None]
                    es = [st[k]["std"] for s, st in pts if st[k]["mean"] is not None]
                    ax.errorbar(xs, ys, yerr=es, marker="o", ms=3, capsize=2, color=cmap(i),
                                label=pol)
                    mk = {"normalized_price": "normalized_price", "mean_wait_s": "wait_s",
                          "opportunity_cost": "opportunity_cost"}[k]
                    mx = sorted(s for (p, s) in md if p == pol)
                    if mx:
                        ax.plot(mx, [md[(pol, s)][mk] for s in mx], ls="--", lw=1,
                                color=cmap(i))
            for ax, yl in zip(axes, ("normalized price P / po", "mean wait (s)",
                                     "opportunity cost P × w")):
                ax.set_xlabel("reserved servers s")
                ax.set_ylabel(yl)
            axes[0].legend(fontsize=7, frameon=False)
            fig.suptitle(f"{label}: waiting policies against s (000 Figs. 13, 16); dashed: "
                         "the queueing model", fontsize=10)
            fig.tight_layout()
            fig.savefig(path, dpi=110)
            plt.close(fig)

        slug = "".join(c if c.isalnum() else "-" for c in label.lower())
        figs.append(Figure(
            f"waiting-{slug}", f"Waiting policies on {label} — price, wait, opportunity cost",
            "Normalized price (total bill over the jobs' core-hours at the on-demand price), "
            "mean wait over all jobs, and opportunity cost P × w (000 §4.1.1) against the "
            "number of reserved servers, mean ± sd over seeds/slices; dashed lines: the "
            "queueing model (000 §3–4, stratus analyze) where the trace is the M/M/s one it "
            "models. " + what_ran(g), draw, rows))
    return figs


#: the policies the bill-against-capacity figure draws (issue 23, item 6)
BILL_POLICIES = ("njw", "ajw-t", "compound")


def _vcpus(mix: str, catalog: str) -> float:
    """vCPUs of a reserved mix ``TYPE:COUNT,...`` of ``catalog``'s types."""
    from stratus.commitments.reserved import parse_reserved
    from stratus.pricing.catalog_files import get_catalog

    cat = get_catalog(catalog)
    return float(sum(cat[name].vcpu * n for name, n in parse_reserved(mix)))


def _bill_points(df) -> list[dict]:
    """(series, reserved vCPUs, bill) per ok cell of either sweep command, for the policies
    of ``BILL_POLICIES``: ``waiting`` cells are the pipeline, its overflow the smallest-VM
    model or a scheduler; ``replay`` cells with a waiting policy are the unified replay."""
    out = []
    for row in df.to_dict("records"):
        res = json.loads(row["result_json"])
        cmd = row["command"]
        if cmd == "waiting":
            pol = res.get("policy")
            if res.get("reserved_mix"):
                cores = _vcpus(res["reserved_mix"], res["catalog"])
            elif isinstance(row.get("opt_reserved_cores"), (int, float)) and \
                    row["opt_reserved_cores"] == row["opt_reserved_cores"]:  # (not NaN)
                cores = res["reserved"] * float(row["opt_reserved_cores"])
            else:
                from stratus.pricing.catalog_files import get_catalog

                cores = res["reserved"] * get_catalog(res["catalog"])[res["server_type"]].vcpu
            over = (res.get("cloud") or "smallest-vm").split(" ")[0]
            series = f"{pol}, overflow {over} (pipeline)"
            cloud = res.get("on_demand_fraction")  # the pipeline: each job runs where sent
        elif cmd == "replay" and isinstance(res.get("waiting"), dict) and res.get("reserved"):
            pol = res["waiting"]["policy"]
            opt = row.get("opt_catalog")  # (NaN where a row has none)
            cat = opt if isinstance(opt, str) else "m4"
            cores = _vcpus(res["reserved"], cat)
            series = f"{pol}, overflow {res['scheduler']} (unified)"
            # what ran on rented instances, by the instances' records (not the gate's split)
            cloud = res.get("ran_on_cloud_fraction")
        else:
            continue
        if pol in BILL_POLICIES:  # by the label as written: the figure's own axes vary
            out.append({"trace_label": row.get("trace_group", row["trace_label"]),
                        "window": window_key(row), "series": series,
                        "vcpus": float(cores), "bill": float(res["total_cost_usd"]),
                        "cloud": float("nan") if cloud is None else float(cloud)})
    return out


def commitment_figures(df) -> list[Figure]:
    """Total bill against reserved capacity (vCPUs) for NJW, AJW-T and compound, one line
    per policy and overflow, pipeline and unified replay side by side, mean ± sd over
    seeds and slices."""
    import matplotlib
    import pandas as pd

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = pd.DataFrame(_bill_points(df))
    if pts.empty:
        return []
    figs = []
    for (label, _), g in pts.groupby(["trace_label", "window"], sort=False):
        series, rows = {}, []
        for name, gs in g.groupby("series", sort=True):
            line = []
            for v, gv in sorted(gs.groupby("vcpus")):
                st = _stat(gv["bill"])
                line.append((v, st))
                rows.append({"series": name, "reserved vCPUs": f"{v:g}",
                             "total bill $": _fmt(st, 2),
                             "tasks run on cloud": _fmt(_stat(gv["cloud"]), 1, pct=True)})
            series[name] = line

        def draw(path, sr=series, label=label):
            fig, ax = plt.subplots(figsize=(11, 4.5))
            cmap = plt.get_cmap("tab10")
            pols = {n.split(",")[0]: i for i, n in enumerate(sorted({k.split(",")[0]
                                                                     for k in sr}))}
            for name, line in sr.items():
                pol = name.split(",")[0]
                ls = "-" if name.endswith("(unified)") else "--"
                # the smallest-VM model: the pipeline's, or one VM per task in the replay
                mk = "o" if "smallest-vm" in name or "task-per-instance" in name else "s"
                ax.errorbar([v for v, _ in line], [st["mean"] for _, st in line],
                            yerr=[st["std"] or 0.0 for _, st in line], ls=ls, marker=mk,
                            ms=4, capsize=2, color=cmap(pols[pol]), label=name)
            ax.set_xlabel("reserved capacity (vCPUs)")
            ax.set_ylabel("total bill ($)")
            ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5))
            ax.set_title(f"{label}: total bill against reserved capacity", fontsize=10)
            fig.tight_layout()
            fig.savefig(path, dpi=110)
            plt.close(fig)

        slug = "".join(c if c.isalnum() else "-" for c in label.lower())
        figs.append(Figure(
            f"bill-vs-reserved-{slug}", f"Total bill against reserved capacity on {label}",
            "The whole bill (reserved capacity for the whole horizon plus the cloud) against "
            "the reserved vCPUs, for NJW, AJW-T and compound (000 §3-4), mean ± sd over "
            "seeds/slices. Dashed: the two-stage pipeline (stratus waiting simulate: the pool "
            "decides, the overflow runs on the cheapest VM that fits or through a scheduler); "
            "solid: the unified replay (stratus replay --reserved --waiting), where the "
            "scheduler also packs its tasks onto reserved room the queue leaves free. "
            + what_ran(df[df.get("trace_group", df["trace_label"]) == label]), draw, rows))
    return figs


def _r(v, d=3):
    return "—" if v is None else f"{v:.{d}f}"


def _model_curves(g) -> dict:
    """The analyzer at each (policy, s) of an M/M/s trace of unit jobs on unit servers."""
    from stratus.waiting.analysis import evaluate

    out = {}
    spec = g["trace"].iloc[0]
    if not spec.startswith("synthetic:mms"):
        return out
    res = json.loads(g["result_json"].iloc[0])
    name = res.get("trace", spec)
    params = dict(kv.split("=", 1) for kv in name.split("?", 1)[1].split("&")) \
        if "?" in name else {}
    lam, mu = float(params.get("lam", 0.2)), float(params.get("mu", 0.002))
    disc = _opt(g, "reserved_discount", None)
    cores = _opt(g, "reserved_cores", None)
    cpu = float(params.get("cpu", 2.0))
    if disc[0] is None or cores[0] is None or float(cores[0]) != cpu:
        return out  # not one job per server: the M/M/s model does not describe it
    pf, po = 1.0 - float(disc[0]), 1.0
    core_hour = float(res.get("server_ondemand_hourly") or 0.0) / float(cores[0])
    b = _opt(g, "b", 0.0)
    t = _opt(g, "t", 0.0)
    for pol, s, bb, tt in set(zip(g["policy"], g["s"], b, t)):
        if pol in ("ljw-spec",):
            continue
        try:
            o = evaluate(pol, int(s), lam=lam, mu=mu, pf=pf, po=po, b=float(bb or 0),
                         t=float(tt or 0)).as_dict()
        except Exception:  # a policy the model does not cover
            continue
        if o.get("wait_s") is None:  # an unstable queue (AJW below the load): no curve
            continue
        out[(pol, s)] = {"normalized_price": o.get("normalized_price"),
                         "wait_s": o.get("wait_s"),
                         # in the simulator's units: P per core-hour of work × w
                         "opportunity_cost": (o.get("normalized_price") or 0) * core_hour
                         * (o.get("wait_s") or 0)}
    return out
