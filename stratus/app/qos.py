"""``stratus qos run|sweep``: deadline admission control of paper 001 (QoPS, VQoPS,
DVQoPS; spec ``qos-and-sharing.md`` A.1-A.12) on a trace of rigid parallel jobs, over a
checked spec (stratus.app.spec.qos); the API is stratus.app.api_qos, the tables
stratus.app.cli.qos."""

from __future__ import annotations

import sys

from stratus.app.spec.qos import QosRunSpec, QosSweepSpec, QosWorkloadOptions
from stratus.base.errors import ConfigError

# --- the workload ------------------------------------------------------------------------


def processors_of(trace, spec: QosWorkloadOptions) -> int:
    if spec.processors is not None:
        return int(spec.processors)
    header = trace.meta.get("swf_header") or {}
    for key in ("MaxProcs", "MaxNodes"):
        v = header.get(key)
        if isinstance(v, int) and v > 0:
            return v
    raise ConfigError(f"{trace.name}: no processor count in the trace (SWF header MaxProcs); "
                      "give --processors")


def jobs_of(trace, spec: QosWorkloadOptions):
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
    end = None if spec.first_jobs is None else spec.skip + spec.first_jobs
    g = g.iloc[spec.skip:end]
    if not len(g):
        raise ConfigError(f"--skip {spec.skip}: {trace.name} has only {len(f)} jobs")
    procs = np.ceil(g["cpu"].to_numpy(np.float64) - 1e-9)
    return (g["submit_s"].to_numpy(np.float64), g["runtime_s"].to_numpy(np.float64), procs,
            g["req"].to_numpy(np.float64) if has_req else None,
            g["job_id"].to_numpy(np.int64))


def workload(trace, spec: QosWorkloadOptions, *, dup_frac: float, urgent_frac: float,
             urgent_cost: float):
    from stratus.qos.jobs import build_workload

    submit, runtime, procs, req, ids = jobs_of(trace, spec)
    return build_workload(submit, runtime, procs, req, ids, P=processors_of(trace, spec),
                          estimates=spec.estimates, overrun=spec.overrun,
                          slack=spec.slack_factor, dup_frac=dup_frac, urgent_frac=urgent_frac,
                          urgent_cost=urgent_cost, base_rate=spec.base_rate,
                          charge_basis=spec.charge_basis, deadline_basis=spec.deadline_basis,
                          dup_copies_urgency=spec.dup_copies_urgency, seed=spec.seed,
                          source=trace.name)


def _workload_doc(wl, spec: QosWorkloadOptions, trace) -> dict:
    return {"trace": trace.name, **wl.info, "estimates": spec.estimates,
            "overrun": spec.overrun, "slack_factor": spec.slack_factor,
            "base_rate": spec.base_rate, "charge_basis": spec.charge_basis,
            "deadline_basis": spec.deadline_basis, "seed": spec.seed}


def config_options(spec: QosWorkloadOptions) -> dict:
    """The simulator's Config keywords that run and sweep share (not scheme, oc)."""
    window, w_init = spec.dv_window_parts()
    return dict(K=spec.qops_k, oc_tie=spec.oc_tie, oc_grid=spec.dv_oc_grid,
                windows_h=spec.dv_windows, wmax_h=spec.dv_wmax, window=window,
                w_init_h=w_init, whatif_start=spec.whatif_start, replay=spec.dv_replay)


# --- run ---------------------------------------------------------------------------------


def run_one(trace, spec: QosRunSpec) -> tuple[dict, dict]:
    """One scheme on ``trace``: (what ``qos run --json`` prints, the per-job columns)."""
    from stratus.qos.run import run
    from stratus.qos.sim import Config
    from stratus.traces.schema import source_ids

    wl = workload(trace, spec, dup_frac=spec.dup_frac, urgent_frac=spec.urgent_frac,
                  urgent_cost=spec.urgent_cost)
    out = run(wl, Config(scheme=spec.scheme, oc=spec.oc, **config_options(spec)))
    doc = {**out.summary, "urgent_frac": spec.urgent_frac, "urgent_cost": spec.urgent_cost,
           "dup_frac": spec.dup_frac, "workload": _workload_doc(wl, spec, trace)}
    jobs, labels = {}, source_ids(trace.frame, out.jobs["job_id"])
    for k, v in out.jobs.items():
        jobs[k] = v
        if k == "job_id" and labels is not None:  # the source's own ids, beside ours
            jobs["source_job_id"] = labels.tolist()
    return doc, jobs


def save_jobs(jobs: dict, out) -> None:
    import pandas as pd

    from stratus.app import outputs

    frame = pd.DataFrame(jobs)
    outputs.write_dir(out, {"jobs.parquet": lambda p: frame.to_parquet(p, index=False)})


# --- sweep -------------------------------------------------------------------------------


def axes(spec: QosSweepSpec) -> dict:
    return {"schemes": spec.schemes, "ocs": spec.ocs, "urgent_fracs": spec.urgent_fracs,
            "urgent_costs": spec.urgent_costs, "dup_fracs": spec.dup_fracs,
            "fixed_windows": spec.dv_fixed_windows or ()}


def sweep(trace, spec: QosSweepSpec, progress=None) -> dict:
    """Every (load, mix) group on the same seeded workload: QoPS, VQoPS at each f, DVQoPS
    (auto W, or at each fixed W), with % revenue improvement over QoPS (001 Table 1,
    Fig. 5a, Table 2). ``progress``: called with each run's summary."""
    from stratus.qos.run import run
    from stratus.qos.sim import Config

    kw, ax = config_options(spec), axes(spec)
    runs = []
    wdoc = None
    for d in ax["dup_fracs"]:
        for u in ax["urgent_fracs"]:
            for c in ax["urgent_costs"]:
                wl = workload(trace, spec, dup_frac=d, urgent_frac=u, urgent_cost=c)
                if wdoc is None:
                    wdoc = _workload_doc(wl, spec, trace)
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


def progress_line(s: dict) -> None:
    print(f"qos sweep: d={s['dup_frac']:g} U={s['urgent_frac']:g} C={s['urgent_cost']:g} "
          f"{label(s)}: revenue {s['revenue']:.6g}", file=sys.stderr, flush=True)
