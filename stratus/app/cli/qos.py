"""``stratus qos run`` and ``qos sweep``: deadline admission control (paper 001: QoPS,
VQoPS, DVQoPS), argv to a spec, the API, then the table or the JSON document."""

from __future__ import annotations

import sys

from stratus.app import api_qos
from stratus.app.cli.common import add_output_flags, add_spec, inputs, print_doc, spec_from
from stratus.app.spec.qos import QosRunSpec, QosSweepSpec


def add_parsers(sub) -> None:
    qs = sub.add_parser("qos", help="deadline admission control: QoPS, VQoPS, DVQoPS "
                                    "(paper 001)").add_subparsers(dest="qos_cmd", required=True)
    p = qs.add_parser("run", help="one scheme on a trace: revenue, acceptance, deadlines")
    add_spec(p, QosRunSpec)
    p.add_argument("--save", metavar="DIR", help="write the per-job table DIR/jobs.parquet")
    p.add_argument("--force", action="store_true", help="replace an earlier --save")
    add_output_flags(p)
    p = qs.add_parser("sweep", help="schemes x OC-factors x mixes on one seeded workload, "
                                    "%% revenue improvement over QoPS (001 Table 1, 2)")
    add_spec(p, QosSweepSpec)
    p.add_argument("--plot", metavar="OUT.png", help="draw the Table 1 / Table 2 shapes")
    p.add_argument("--force", action="store_true", help="replace an existing --plot file")
    add_output_flags(p)


def cmd_qos(args) -> int:
    return (cmd_run if args.qos_cmd == "run" else cmd_sweep)(args)


def cmd_run(args) -> int:
    from stratus.app import outputs
    from stratus.app.qos import save_jobs

    spec = spec_from(args, QosRunSpec)
    save = (outputs.check_dir(args.save, "--save", inputs(spec.trace), args.force)
            if args.save else None)  # before the run
    doc, jobs = api_qos.run_qos_run(spec)
    if save is not None:
        save_jobs(jobs, save)
        print(f"wrote {save}/jobs.parquet", file=sys.stderr)
    return print_doc(doc, args.json, lambda: run_table(doc))


def cmd_sweep(args) -> int:
    from stratus.app import outputs

    spec = spec_from(args, QosSweepSpec)
    # the format is the extension's (png, svg, pdf); the temporary name keeps it
    png = outputs.check_plot(args.plot, "--plot", inputs(spec.trace), args.force)[0] \
        if args.plot else None
    doc = api_qos.run_qos_sweep(spec, progress=not args.json)
    if png is not None:
        from stratus.app.qos_plots import plot_sweep

        outputs.write_file(png, lambda tmp: plot_sweep(doc, tmp))
        print(f"wrote {png}", file=sys.stderr)
    return print_doc(doc, args.json, lambda: sweep_table(doc))


RUN_FIELDS = ("scheme", "oc", "jobs", "offered_load", "accepted", "accepted_urgent",
              "accepted_normal", "revenue", "revenue_urgent", "revenue_normal",
              "deadline_violations", "overrun_killed", "dropped_oversize", "oc_var_avg",
              "load_var")


def run_table(doc: dict) -> str:
    from stratus.app.report import table

    rows = [(k, doc.get(k)) for k in RUN_FIELDS if k in doc]
    if doc.get("window_trajectory"):
        rows.append(("W changes (h)", " ".join(f"{w:g}" for _, w in doc["window_trajectory"])))
        rows.append(("OC updates", len(doc["oc_trajectory"]) - 1))
    return table(("field", "value"), rows, align_left=2)


def sweep_table(doc: dict) -> str:
    from stratus.app.qos import label
    from stratus.app.report import table

    rows = []
    for r in doc["runs"]:
        rows.append((f"{r['dup_frac']:g}", f"{r['offered_load']:.3f}",
                     f"{100 * r['urgent_frac']:g}%", f"{r['urgent_cost']:g}X", label(r),
                     f"{r['revenue']:.4g}",
                     "" if r["improvement_pct"] is None else f"{r['improvement_pct']:+.1f}%",
                     r["accepted"], r["accepted_urgent"], r["accepted_normal"],
                     r["deadline_violations"], r.get("load_var", "")))
    return table(("dup", "load", "U", "C", "scheme", "revenue", "vs QoPS", "accepted",
                  "urgent", "normal", "violations", "load_var"), rows, align_left=5)


COMMANDS = {"qos": cmd_qos}
