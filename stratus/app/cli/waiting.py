"""``stratus analyze``, ``waiting simulate`` and ``advise``: waiting policies over reserved
servers (papers 000, 003), argv to a spec, the API, then the table or the JSON document."""

from __future__ import annotations

import sys

from stratus.app import api
from stratus.app import spec as S
from stratus.app.cli.common import (
    add_output_flags,
    add_spec,
    inputs,
    print_doc,
    print_fields,
    spec_from,
)


def add_parsers(sub) -> None:
    p = sub.add_parser("analyze", help="queueing model of a waiting policy over s reserved "
                                       "servers (paper 000 §3-4)")
    add_spec(p, S.AnalyzeSpec)
    add_output_flags(p)
    wt = sub.add_parser("waiting", help="reserved pools under waiting policies (paper 000)"
                        ).add_subparsers(dest="waiting_cmd", required=True)
    p = wt.add_parser("simulate", help="a trace through s reserved servers under a waiting "
                                       "policy, overflow to on-demand VMs")
    add_spec(p, S.WaitingSpec)
    add_output_flags(p)
    p = sub.add_parser("advise", help="how many servers to reserve for a trace under a waiting "
                                      "policy (MILP start, simulated marginal analysis)")
    add_spec(p, S.AdviseSpec)
    p.add_argument("--plot", metavar="OUT.png", help="price and wait against s (.png, .svg "
                   "or .pdf)")
    p.add_argument("--force", action="store_true", help="replace an existing --plot file")
    add_output_flags(p)


def cmd_analyze(args) -> int:
    return print_fields(api.run_analyze(spec_from(args, S.AnalyzeSpec)), args.json)


def cmd_waiting(args) -> int:
    return print_fields(api.run_waiting(spec_from(args, S.WaitingSpec)), args.json)


def cmd_advise(args) -> int:
    from stratus.app import outputs
    from stratus.app.waiting import plot_advice

    spec = spec_from(args, S.AdviseSpec)
    png, fmt = outputs.check_plot(args.plot, "--plot", inputs(spec.trace), args.force) \
        if args.plot else (None, None)
    doc = api.run_advise(spec)
    if png is not None:
        outputs.write_file(png, lambda tmp: plot_advice(doc, tmp, fmt))
        print(f"wrote {png}", file=sys.stderr)
    return print_doc(doc, args.json, lambda: _advice_table(doc))


def _advice_table(doc: dict) -> str:
    from stratus.app.report import table

    o, m = doc["optimal"], doc["at_milp"]
    return table(("", "servers", "total $", "normalized", "mean wait s", "on demand"),
                 [("simulated optimum", o["servers"], o["total_cost_usd"],
                   o["normalized_price"], o["mean_wait_s"], o["on_demand_fraction"]),
                  ("MILP start", m["servers"], m["total_cost_usd"], m["normalized_price"],
                   m["mean_wait_s"], m["on_demand_fraction"])])


COMMANDS = {"analyze": cmd_analyze, "waiting": cmd_waiting, "advise": cmd_advise}
