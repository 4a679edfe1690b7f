"""``stratus share simulate|sweep|defect|solo``: paper 004's shared cluster, argv to a
spec, the API, then the table or the JSON document."""

from __future__ import annotations

import sys

from stratus.app.cli.common import (
    add_output_flags,
    add_spec,
    inputs,
    print_doc,
    spec_from,
)
from stratus.app.spec.share import SHARE_SPECS

SHARE_COMMANDS = (("simulate", "one policy at N reserved: bill, waits, per-user charges"),
                  ("sweep", "price and wait against N for each policy, N* (Figs. 5-6)"),
                  ("defect", "users leave when waits pass θ x runtime (Figs. 9-10)"),
                  ("solo", "each user alone on k reserved units of their own (Fig. 11)"))


def add_parsers(sub) -> None:
    sh = sub.add_parser("share", help="a shared cloud cluster: provisioning, chargeback, "
                        "defection, flying solo (paper 004)").add_subparsers(
        dest="share_cmd", required=True)
    for name, text in SHARE_COMMANDS:
        p = sh.add_parser(name, help=text)
        add_spec(p, SHARE_SPECS[name])
        if name == "simulate":
            p.add_argument("--save", metavar="DIR", help="write jobs.parquet into DIR")
        p.add_argument("--plot", metavar="OUT.png", help="004's figures for this command")
        p.add_argument("--force", action="store_true", help="replace --plot / --save output")
        add_output_flags(p)


def cmd_share(args) -> int:
    from stratus.app import outputs
    from stratus.app.api_share import run_share
    from stratus.app.share import jobs_frame, plot, text

    cmd = args.share_cmd
    spec = spec_from(args, SHARE_SPECS[cmd])
    # the format is the extension's (png, svg, pdf); the temporary name keeps it
    png = outputs.check_plot(args.plot, "--plot", inputs(spec.trace), args.force)[0] \
        if args.plot else None
    save = outputs.check_dir(args.save, "--save", inputs(spec.trace), args.force) \
        if cmd == "simulate" and args.save else None
    doc, extra = run_share(spec)
    if png is not None:
        outputs.write_file(png, lambda p: plot(cmd, doc, extra, p))
        print(f"wrote {png}", file=sys.stderr)
    if save is not None:
        outputs.write_dir(save, {"jobs.parquet": jobs_frame(extra).to_parquet})
        print(f"wrote {save}/jobs.parquet", file=sys.stderr)
    return print_doc(doc, args.json, lambda: text(cmd, doc))


COMMANDS = {"share": cmd_share}
