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
    p = sub.add_parser("advise", help="what to commit to: servers of a reserved pool under a "
                                      "waiting policy (paper 000), or with --commit a reserved "
                                      "mix or savings plan for a replay's scheduler (MILP "
                                      "start, simulated search)")
    add_spec(p, S.AdviseSpec, optional=("policy",))  # required without --commit only
    add_spec(p, S.CommitSpec, skip=tuple(S.AdviseSpec.option_names()), optional=("commit",))
    p.add_argument("--plot", metavar="OUT.png", help="price and wait against s (.png, .svg "
                   "or .pdf)")
    p.add_argument("--force", action="store_true", help="replace an existing --plot file")
    add_output_flags(p)


def cmd_analyze(args) -> int:
    return print_fields(api.run_analyze(spec_from(args, S.AnalyzeSpec)), args.json)


def cmd_waiting(args) -> int:
    return print_fields(api.run_waiting(spec_from(args, S.WaitingSpec)), args.json)


def _only(args, cls, other, mode: str) -> None:
    """Options of ``other``'s mode given to ``cls``'s: one clear error, not ignored."""
    from stratus.base.errors import ConfigError

    theirs = set(other.option_names()) - set(cls.option_names())
    given = sorted(n for n in theirs if n in vars(args))
    if given:
        raise ConfigError(f"{S.cli_label(given[0])} is not an option of {mode}")


def cmd_advise(args) -> int:
    from stratus.app import outputs

    commit = "commit" in vars(args)
    if commit:
        _only(args, S.CommitSpec, S.AdviseSpec, "stratus advise --commit (a replay's options: "
              "--scheduler, --waiting POLICY, --market ...)")
        spec = spec_from(args, S.CommitSpec)
    else:
        _only(args, S.AdviseSpec, S.CommitSpec, "stratus advise without --commit (the pool "
              "advisor: --policy, --reserved-type ...)")
        spec = spec_from(args, S.AdviseSpec)
    png, fmt = outputs.check_plot(args.plot, "--plot", inputs(spec.trace), args.force) \
        if args.plot else (None, None)
    if commit:
        from stratus.app.commit import plot_commit as plot

        doc = api.run_advise_commit(spec, progress=not args.json)
        table = _commit_table
    else:
        from stratus.app.waiting import plot_advice as plot

        doc = api.run_advise(spec)
        table = _advice_table
    if png is not None:
        outputs.write_file(png, lambda tmp: plot(doc, tmp, fmt))
        print(f"wrote {png}", file=sys.stderr)
    return print_doc(doc, args.json, lambda: table(doc))


def _commit_table(doc: dict) -> str:
    from stratus.app.report import table

    cols = ("commitment", "total_cost_usd", "commitment_cost_usd", "cloud_cost_usd",
            "reserved_utilization", "mean_wait_s")
    rows = [(("* " if p == doc["optimum"] else "  ") + p["commitment"],
             *(p[c] for c in cols[1:])) for p in doc["points"]]
    head = (f"{doc['commit']} for {doc['scheduler']} on {doc['trace']}: optimum "
            f"{doc['optimum']['commitment']} ({doc['optimum']['total_cost_usd']} $); the "
            f"MILP's {doc['at_milp']['commitment']} costs {doc['milp_extra_cost_pct']}% more")
    return head + "\n" + table(("commitment", "total $", "commitment $", "cloud $",
                                "reserved util", "mean wait s"), rows)


def _advice_table(doc: dict) -> str:
    from stratus.app.report import table

    o, m = doc["optimal"], doc["at_milp"]
    return table(("", "servers", "total $", "normalized", "mean wait s", "on demand"),
                 [("simulated optimum", o["servers"], o["total_cost_usd"],
                   o["normalized_price"], o["mean_wait_s"], o["on_demand_fraction"]),
                  ("MILP start", m["servers"], m["total_cost_usd"], m["normalized_price"],
                   m["mean_wait_s"], m["on_demand_fraction"])])


COMMANDS = {"analyze": cmd_analyze, "waiting": cmd_waiting, "advise": cmd_advise}
