"""``stratus schedulers``, ``catalogs`` and ``traces convert|describe|formats``."""

from __future__ import annotations

import sys

from stratus.app import api
from stratus.app import spec as S
from stratus.app.cli.common import add_output_flags, add_spec, inputs, print_doc, spec_from


def add_parsers(sub) -> None:
    p = sub.add_parser("schedulers", help="list the registered schedulers")
    add_output_flags(p)
    p = sub.add_parser("catalogs", help="list the built-in instance catalogs; `catalogs show "
                                        "NAME|FILE` prints one")
    add_output_flags(p)
    cs = p.add_subparsers(dest="catalogs_cmd")
    q = cs.add_parser("show", help="one catalog's types: a built-in name or a .toml/.csv file")
    q.add_argument("catalog", metavar="NAME|FILE")
    q.add_argument("--json", dest="show_json", action="store_true",
                   help="print one JSON document on stdout")
    tr = sub.add_parser("traces", help="convert and characterize traces").add_subparsers(
        dest="traces_cmd", required=True)
    p = tr.add_parser("convert", help="write a trace as canonical Parquet or CSV (streams big "
                                      "inputs)")
    p.add_argument("input", help="trace file, the Google 2011 directory or synthetic:NAME[?k=v&...]")
    p.add_argument("--format", dest="fmt", help="input format (see `stratus traces formats`)")
    p.add_argument("-o", "--output", required=True,
                   help="output file: .parquet (canonical Parquet) or .csv / .csv.gz (its "
                        "columns as CSV); any other name is refused")
    p.add_argument("--force", action="store_true", help="replace the output if it exists")
    add_output_flags(p)
    p = tr.add_parser("describe", help="jobs, tasks, runtimes, requests, priorities, arrivals, "
                                      "offered load of a trace")
    add_spec(p, S.WindowSpec, positional=("trace",))
    p.add_argument("--plot", metavar="OUT.png", help="also draw runtime/job-size CDFs and "
                   "arrivals (.png, .svg or .pdf)")
    p.add_argument("--force", action="store_true", help="replace the --plot file if it exists")
    add_output_flags(p)
    p = tr.add_parser("formats", help="list the trace formats")
    add_output_flags(p)


def cmd_schedulers(args) -> int:
    docs = api.schedulers()
    return print_doc(docs, args.json, lambda: _schedulers_text(docs))


def _schedulers_text(docs: list[dict]) -> str:
    from stratus.app.report import table
    from stratus.policy.params import canonical, text

    by = {d["name"]: d for d in docs}

    def alias(d: dict) -> str:
        base = by[d["alias_of"]]
        differ = {k: v for k, v in d["options"].items() if v != base["options"][k]}
        est = f" (estimator {d['estimator']})" if d["estimator"] != base["estimator"] else ""
        return f"  {d['name']} = {base['name']}" + (f"?{canonical(differ)}" if differ else "") + est

    return "\n".join([
        table(("name", "kind", "estimator", "description"),
              [(d["name"], d["kind"], d["estimator"] or "(replay's)", d["description"])
               for d in docs], align_left=4),
        "", "options (NAME?OPTION=VALUE&...):",
        *(f"  {d['name']}: " + ", ".join(
            f"{k}={text(v)}" + (f" ({'|'.join(d['choices'][k])})" if k in d["choices"] else "")
            for k, v in d["options"].items())
          for d in docs if d["options"] and not d["alias_of"]),
        "", "aliases (a name for a scheduler with options set; a query's options override "
        "them):",
        *(alias(d) for d in docs if d["alias_of"]),
        "", "parameters (NAME?KEY.NAME=VALUE&...):",
        *(f"  {d['name']}: " + ", ".join(f"{k}={text(v)}" for k, v in d["params"].items())
          for d in docs if d["params"])])


def cmd_catalogs(args) -> int:
    """``stratus catalogs``: the built-in catalogs; ``catalogs show X``: one catalog."""
    from stratus.app.report import table

    if args.catalogs_cmd == "show":
        doc = api.catalog(args.catalog)
        return print_doc(doc, args.json or args.show_json, lambda: _catalog_text(doc))
    docs = api.catalogs()
    return print_doc(docs, args.json, lambda: table(
        ("name", "types", "families", "region", "as_of"),
        [(d["name"], d["types"], ",".join(d["families"]), d["region"], d["as_of"])
         for d in docs], align_left=5))


def _catalog_text(doc: dict) -> str:
    from stratus.app.report import table

    head = [f"catalog {doc['name']}: {doc['types']} types, families "
            f"{', '.join(doc['families'])}"]
    head += [f"{k}: {doc[k]}" for k in ("region", "as_of", "source") if doc[k]]
    return "\n".join(head) + "\n" + table(
        ("type", "family", "vcpu", "mem_gib", "gpus", "ondemand $/h", "reserved $/h",
         "verified"),
        [(t["name"], t["family"], f"{t['vcpu']:g}", f"{t['mem_gib']:g}", t["gpus"],
          f"{t['ondemand_hourly']:g}",
          "" if t["reserved_hourly"] is None else f"{t['reserved_hourly']:.6g}",
          "yes" if t["verified"] else "no") for t in doc["instance_types"]], align_left=2)


def cmd_traces(args) -> int:
    return {"convert": _convert, "describe": _describe,
            "formats": _formats}[args.traces_cmd](args)


def _convert(args) -> int:
    out = api.convert(args.input, args.output, args.fmt, args.force)
    return print_doc(out, args.json, lambda: f"wrote {out['tasks']:,} tasks to "
                                             f"{out['output']} in {out['seconds']:.1f} s")


def _describe(args) -> int:
    from stratus.app import outputs
    from stratus.app.session import Session
    from stratus.traces.describe import describe as describe_trace
    from stratus.traces.describe import plot

    w = spec_from(args, S.WindowSpec)
    png, fmt = outputs.check_plot(args.plot, "--plot", inputs(w.trace), args.force) \
        if args.plot else (None, None)
    trace = Session(w).trace
    out = {"trace": trace.name, **describe_trace(trace)}
    if png is not None:
        outputs.write_file(png, lambda tmp: plot(trace, str(tmp), fmt))
        print(f"wrote {png}", file=sys.stderr)
    return print_doc(out, args.json, lambda: _fields_text(out))


def _fields_text(out: dict) -> str:
    from stratus.app.report import table

    rows = []
    for k, v in out.items():
        if isinstance(v, dict):
            rows += [(f"{k}.{kk}", vv) for kk, vv in v.items() if not isinstance(vv, (dict, list))]
        elif not isinstance(v, list):
            rows.append((k, v))
    return table(("field", "value"), rows, align_left=2)


def _formats(args) -> int:
    from stratus.app.report import table

    doc = api.trace_formats()
    return print_doc(doc, args.json, lambda: table(("format", "reads"), list(doc.items()),
                                                   align_left=2))


COMMANDS = {"schedulers": cmd_schedulers, "catalogs": cmd_catalogs, "traces": cmd_traces}

