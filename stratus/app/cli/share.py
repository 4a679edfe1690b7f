"""``stratus share``: paper 004's shared cluster. Its options are argparse's still (not yet
a spec); the trace window is the spec's, validated before the load."""

from __future__ import annotations

from stratus.app.cli.common import (
    add_output_flags,
    add_trace_options,
    inputs,
    normalize_window,
)

SHARE_COMMANDS = (("simulate", "one policy at N reserved: bill, waits, per-user charges"),
                  ("sweep", "price and wait against N for each policy, N* (Figs. 5-6)"),
                  ("defect", "users leave when waits pass θ x runtime (Figs. 9-10)"),
                  ("solo", "each user alone on k reserved units of their own (Fig. 11)"))


def add_parsers(sub) -> None:
    sh = sub.add_parser("share", help="a shared cloud cluster: provisioning, chargeback, "
                        "defection, flying solo (paper 004)").add_subparsers(
        dest="share_cmd", required=True)
    for name, text in SHARE_COMMANDS:
        _share_parser(sh.add_parser(name, help=text), name)


def _share_parser(p, name: str) -> None:
    p.add_argument("--trace", required=True, help="a trace file or synthetic:NAME[?...]")
    add_trace_options(p)
    p.add_argument("--policy", default="burst-wait",
                   help="lift-and-shift, burst-nowait or burst-wait (default)")
    p.add_argument("--reserved", metavar="N|optimal" if name != "sweep" else "A:B:S",
                   required=name == "simulate",
                   default={"sweep": "0:160:8"}.get(name, "optimal"),
                   help="reserved VMs (node mode) or cores (pool mode); sweep: a grid")
    if name == "sweep":
        p.add_argument("--policies", default="lift-and-shift,burst-wait,burst-nowait")
        p.add_argument("--periods", type=int, default=1,
                       help="also cut the trace into K spans: N* per span and each span "
                            "at the previous one's N* (Fig. 7)")
    else:
        p.add_argument("--grid", default="0:160:8", help="N searched for 'optimal'")
    p.add_argument("--mode", default="auto", help="pool (SWF default), node or auto")
    p.add_argument("--vm", default="m5.16xlarge", help="node mode's reserved VM")
    p.add_argument("--vm-cores", type=float, default=1.0, help="pool mode: cores per unit")
    p.add_argument("--reserved-ratio", type=float, default=0.6,
                   help="reserved price / on-demand price (0.6, 004 §5)")
    p.add_argument("--od-sizing", default="auto", help="exact (pool default) or m5")
    p.add_argument("--b", type=float, default=86400.0, help="burst-wait: longest wait, s")
    p.add_argument("--t", type=float, default=180.0, help="burst-wait: short jobs, s")
    p.add_argument("--short-jobs", default="reserved-first", help="reserved-first or ondemand")
    p.add_argument("--placement", default="best-fit", help="node mode: best-fit or first-fit")
    p.add_argument("--pricing", default="socialist", help="socialist or capitalist")
    p.add_argument("--wait-metric", default="ratio-of-means",
                   help="per-user wait/runtime: ratio-of-means or mean-of-ratios")
    if name == "defect":
        p.add_argument("--thetas", default="1,2,5,10,15,20,30,50,100,1000,inf")
        p.add_argument("--defect-on-price", action="store_true",
                       help="also leave when one's price reaches on-demand")
    if name == "solo":
        p.add_argument("--ks", default="0,1,2,4,8,16,32,64")
        p.add_argument("--burst-jobs", type=int, default=10,
                       help="bursty: this many jobs in some 5 minutes")
    if name in ("simulate", "sweep"):
        p.add_argument("--steady-state", type=float, default=0.0, metavar="F",
                       help="mean wait without the first and last F of jobs (0)")
    if name == "simulate":
        p.add_argument("--save", metavar="DIR", help="write jobs.parquet into DIR")
        p.add_argument("--strict", action="store_true",
                       help="a job that can never fit the reserved capacity is an error")
    p.add_argument("--plot", metavar="OUT.png", help="004's figures for this command")
    p.add_argument("--force", action="store_true", help="replace --plot / --save output")
    add_output_flags(p)


def _session(args):
    from stratus.app.session import Session

    return Session(normalize_window(args))


def _inputs(args) -> list:
    return inputs(args.trace)


def cmd_share(args) -> int:
    from stratus.app.share import cmd_share as run

    normalize_window(args)  # before any other check reads the window
    return run(args, _session, _inputs)


COMMANDS = {"share": cmd_share}
