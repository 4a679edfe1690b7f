"""Paper 004's figures from ``stratus share`` results: each function takes a command's
result document (and for Fig. 8 the run) and a path, and writes one PNG there (the caller
writes through a temporary name: stratus.app.outputs), so a later report can call them."""

from __future__ import annotations

import numpy as np


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, out) -> None:
    plt = _plt()
    fig.tight_layout()
    try:
        fig.savefig(out, format="png", dpi=100)
    finally:
        plt.close(fig)


def _cdf(ax, values, label):
    v = np.sort(np.asarray([x for x in values if x is not None and np.isfinite(x)], float))
    if len(v):
        ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=label)


def plot_sweep(doc: dict, out) -> None:
    """Figs. 5 and 6: normalized price and mean wait against the reserved count N."""
    plt = _plt()
    per = doc.get("periods") or []
    fig, axes = plt.subplots(1, 3 if per else 2, figsize=(16 if per else 11, 4))
    a, b = axes[0], axes[1]
    if per:  # Fig. 7: π(N) of each span for the last policy (burst-wait by default)
        pol = "burst-wait" if "burst-wait" in per[0]["price"] else list(per[0]["price"])[-1]
        for row in per:
            axes[2].plot(doc["grid"], row["price"][pol], "o-", ms=3,
                         label=f"period {row['period']} (N* {row['optimal'][pol]['reserved']})")
        axes[2].axhline(1.0, color="gray", lw=0.8, ls=":")
        axes[2].set_xlabel("reserved N")
        axes[2].set_ylabel("normalized price π")
        axes[2].set_title(f"Fig. 7: {pol} by period", fontsize=9)
        axes[2].legend(fontsize=8)
    for p in doc["policies"]:
        n = [q["reserved"] for q in p["points"]]
        a.plot(n, [q["normalized_price"] for q in p["points"]], "o-", ms=3, label=p["policy"])
        b.plot(n, [q["mean_wait_s"] / 3600.0 for q in p["points"]], "o-", ms=3,
               label=p["policy"])
    a.axhline(1.0, color="gray", lw=0.8, ls=":")
    a.set_xlabel("reserved N")
    a.set_ylabel("normalized price π (1 = on-demand)")
    a.set_title("Fig. 5: price", fontsize=9)
    b.set_xlabel("reserved N")
    b.set_ylabel("mean wait (h)")
    b.set_yscale("symlog", linthresh=1.0)
    b.set_title("Fig. 6: mean wait", fontsize=9)
    a.legend(fontsize=8)
    fig.suptitle(doc.get("trace", ""), fontsize=9)
    _save(fig, out)


def plot_simulate(doc: dict, run, out) -> None:
    """Fig. 8 (CDFs of per-job wait/runtime and per-user mean wait/mean runtime) and Fig.
    10 (sorted per-user price against the cluster's normalized price)."""
    plt = _plt()
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    ratio = run.wait / run.workload.runtime
    _cdf(a, np.maximum(ratio, 1e-3), "jobs: wait / runtime")
    _cdf(a, [max(u["wait_ratio"], 1e-3) for u in doc["per_user"]],
         "users: mean wait / mean runtime")
    a.set_xscale("log")
    a.axvline(15, color="gray", lw=0.8, ls=":")
    a.set_xlabel("wait / runtime (values below 1e-3 drawn at 1e-3)")
    a.set_ylabel("CDF")
    a.set_title(f"Fig. 8: {doc['policy']} at N = {doc['reserved']}", fontsize=9)
    a.legend(fontsize=8)
    prices = sorted(u["price"] for u in doc["per_user"] if u["price"] is not None)
    b.plot(range(len(prices)), prices, "o-", ms=3, label=f"π_u ({doc['pricing']})")
    if doc["normalized_price"] is not None:
        b.axhline(doc["normalized_price"], color="k", lw=1, label="cluster π")
    b.axhline(1.0, color="gray", lw=0.8, ls=":")
    b.set_xlabel("users, sorted")
    b.set_ylabel("price (1 = on-demand)")
    b.set_title("Fig. 10: per-user price", fontsize=9)
    b.legend(fontsize=8)
    _save(fig, out)


def plot_defect(doc: dict, out) -> None:
    """Fig. 9: participation and the final normalized price against θ."""
    plt = _plt()
    ts = doc["thetas"]
    finite = [t["theta"] for t in ts if not t["theta_inf"]]
    top = max(finite, default=1.0) * 10 if finite else 10.0
    x = [top if t["theta_inf"] else max(t["theta"], 0.1) for t in ts]
    fig, a = plt.subplots(figsize=(7, 4))
    a.plot(x, [t["participation"] for t in ts], "o-", ms=3, label="participation")
    a.set_xscale("log")
    a.set_xlabel("θ: mean wait threshold, × mean runtime (rightmost: ∞)")
    a.set_ylabel("share of users who stay")
    a2 = a.twinx()
    a2.plot(x, [t["normalized_price"] for t in ts], "s--", ms=3, color="tab:red",
            label="normalized price")
    a2.axhline(1.0, color="gray", lw=0.8, ls=":")
    a2.set_ylabel("normalized price π")
    lines = a.get_lines() + a2.get_lines()
    a.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="center right")
    a.set_title(f"Fig. 9: {doc['policy']} at N = {doc['reserved']}, {doc['pricing']}",
                fontsize=9)
    _save(fig, out)


def plot_solo(doc: dict, out) -> None:
    """Fig. 11: a user's price and wait against k reserved units of their own (the user
    with the largest k*, else the one with the most jobs), and k* over users."""
    plt = _plt()
    users = doc["per_user"]
    if not users:
        fig, a = plt.subplots(figsize=(7, 4))
        a.set_title("no users")
        _save(fig, out)
        return
    rep = max(users, key=lambda u: (u["k_star"], u["jobs"]))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    ks = [p["k"] for p in rep["curve"]]
    a.plot(ks, [p["price"] for p in rep["curve"]], "o-", ms=3, label="price π_u(k)")
    a.axhline(1.0, color="gray", lw=0.8, ls=":")
    a.set_xlabel("k: reserved units of the user's own")
    a.set_ylabel("price (1 = on-demand)")
    a2 = a.twinx()
    a2.plot(ks, [p["mean_wait_s"] / 3600.0 for p in rep["curve"]], "s--", ms=3,
            color="tab:red", label="mean wait (h)")
    a2.set_ylabel("mean wait (h)")
    lines = a.get_lines() + a2.get_lines()
    a.legend(lines, [ln.get_label() for ln in lines], fontsize=8)
    a.set_title(f"Fig. 11: user {rep['user']} flying solo ({rep['class']})", fontsize=9)
    cls = doc["classes"]
    b.bar(list(cls), list(cls.values()))
    b.set_ylabel("users")
    b.set_title("§6.3 classes (descriptive)", fontsize=9)
    _save(fig, out)
