"""``stratus replay``, ``compare``, ``sensitivity`` and ``estimate``: argv to a spec, the
API, then the table or the JSON document."""

from __future__ import annotations

import sys

from stratus.app import api
from stratus.app import spec as S
from stratus.app.cli.common import (
    add_output_flags,
    add_spec,
    inputs,
    print_doc,
    progress_wanted,
    spec_from,
)


def add_parsers(sub) -> None:
    p = sub.add_parser("replay", help="replay a trace under one scheduler")
    add_spec(p, S.ReplaySpec)
    p.add_argument("--save", metavar="DIR",
                   help="also write instances/jobs tables as Parquet into DIR (new or empty; "
                        "written as a unit)")
    p.add_argument("--force", action="store_true", help="replace an earlier --save in DIR")
    add_output_flags(p, progress=True)
    p = sub.add_parser("compare", help="replay one trace under several schedulers")
    add_spec(p, S.CompareSpec)
    add_output_flags(p, progress=True)
    p = sub.add_parser("sensitivity", help="cost against runtime-estimate error h "
                                           "(Stratus §5.4.2, Fig. 8)")
    add_spec(p, S.SensitivitySpec)
    add_output_flags(p, progress=True)
    p = sub.add_parser("estimate", help="error distribution of a runtime estimator on a trace")
    add_spec(p, S.EstimateSpec)
    add_output_flags(p)


def cmd_replay(args) -> int:
    from stratus.app import outputs

    spec = spec_from(args, S.ReplaySpec)
    save = (outputs.check_dir(args.save, "--save", inputs(spec.trace, spec.spot_prices),
                              args.force) if args.save else None)  # before the run
    res = api.run_replay(spec, progress=not args.no_progress)
    if save is not None:
        outputs.write_dir(save, {"instances.parquet": res.instances.to_parquet,
                                 "jobs.parquet": res.jobs.to_parquet})
        print(f"wrote {save}/instances.parquet and jobs.parquet", file=sys.stderr)
    if args.json:
        print(res.to_json())
        return 0
    from stratus.app.report import summary_table

    print(summary_table(res.summary))
    return 0


def cmd_compare(args) -> int:
    from stratus.app.report import comparison_table, slices_table

    spec = spec_from(args, S.CompareSpec)
    doc = api.run_compare(spec, progress=progress_wanted(args))
    text = slices_table if "slices" in doc else comparison_table
    notes = "".join(f"\nnote: {n}" for n in doc.get("notes", []))
    return print_doc(doc, args.json, lambda: text(doc["runs"]) + notes)


def cmd_sensitivity(args) -> int:
    from stratus.app.report import sensitivity_table

    doc = api.run_sensitivity(spec_from(args, S.SensitivitySpec),
                              progress=progress_wanted(args))
    return print_doc(doc, args.json, lambda: sensitivity_table(doc))


def cmd_estimate(args) -> int:
    out = api.run_estimate(spec_from(args, S.EstimateSpec))
    return print_doc(out, args.json, lambda: _estimate_table(out))


def _estimate_table(out: dict) -> str:
    from stratus.app.report import table

    pct = out.get("relative_error_percentiles", {})
    rows = [("trace", out["trace"]), ("estimator", out["estimator"]),
            ("jobs (warm-up jobs)", f"{out['jobs']:,} ({out['warmup_jobs']:,})")]
    rows += [(f"relative error {k}", f"{v:+.3f}") for k, v in pct.items()]
    rows += [(k.replace("_", " "), out[k]) for k in ("within_10pct", "within_factor_2",
                                                     "median_abs_log_ratio", "under_estimates")
             if k in out]
    return table(("metric", "value"), rows, align_left=2)


COMMANDS = {"replay": cmd_replay, "compare": cmd_compare, "sensitivity": cmd_sensitivity,
            "estimate": cmd_estimate}
