"""Instance-type diversity on one trace (issue 19, item 9): replays of schedulers under
catalogs, readings of the trace and anti-affinity on or off, as a table.

    python benchmarks/bench_diversity.py --trace ../shared/data/google-2011 \\
        --format "google2011?window_start_s=600&window_hours=19" \\
        --readings any,task-finish --catalogs m4,aws-2017-cmr \\
        --schedulers stratus,stratus-oracle,fleet,karpenter,hotspot --seed 1 \\
        --out /tmp/diversity --jobs 2           # runs what is missing, prints the table

A reading is the google2011 ``terminal=`` option; ``--anti-affinity on,off`` adds the
google2011 ``anti_affinity=`` option. Each replay is ``stratus replay ... --json`` in a
child process; its JSON is kept in ``--out``, so an interrupted run resumes and
``--table-only`` reprints the table from what is there.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from itertools import product
from pathlib import Path


def cell_name(reading: str, catalog: str, sched: str, aa: str, market: str) -> str:
    return f"{reading}.{Path(catalog).stem}.{sched}.aa-{aa}.{market}.json"


def trace_format(args, reading: str, aa: str) -> str | None:
    if not args.format:
        return None
    opts = []
    if reading != "any":
        opts.append(f"terminal={reading}")
    if aa == "off":
        opts.append("anti_affinity=ignore")
    if not opts:
        return args.format
    sep = "&" if "?" in args.format else "?"
    return args.format + sep + "&".join(opts)


def run(args, cell: tuple[str, str, str, str, str]) -> str:
    reading, catalog, sched, aa, market = cell
    out = args.out / cell_name(*cell)
    if out.exists():
        return f"{out.name}: kept"
    cmd = [sys.executable, "-m", "stratus.app.cli", "replay", "--trace", args.trace,
           "--seed", str(args.seed), "--scheduler", sched, "--catalog", catalog,
           "--market", market, "--json", "--no-progress"]
    fmt = trace_format(args, reading, aa)
    if fmt:
        cmd += ["--format", fmt]
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w") as fh:
        code = subprocess.run(cmd, stdout=fh).returncode
    if code != 0:  # one failed cell is reported; the others still run
        tmp.unlink()
        return f"{out.name}: failed with exit {code}"
    tmp.rename(out)
    return f"{out.name}: done"


def family_shares(d: dict) -> str:
    fams = d.get("usage_by_family") or {}
    total = sum(f["vcpu_hours"] for f in fams.values()) or 1.0
    return " / ".join(f"{k} {v['vcpu_hours'] / total:.2f}" for k, v in sorted(fams.items()))


def row(cell, d: dict) -> str:
    reading, catalog, sched, aa, market = cell
    lat = d["latency"]
    bound = d.get("lower_bound_integer_usd")
    done = "" if d["tasks_completed"] == d["tasks"] else f" ({d['tasks_unfinished']:,} unfinished)"
    return (f"| {reading} | {Path(catalog).stem} | {sched} | {aa} | {market} | "
            f"{d['total_cost_usd']:,.2f}{done} | {d['utilization']['constraining']:.3f} | "
            f"{d['billed_breakdown'].get('idle_shape', float('nan')):.3f} | "
            f"{family_shares(d)} | {lat['p50']} / {lat['p95']} | "
            f"{'-' if bound is None else f'{bound:,.2f}'} | {d['wall_seconds']:.1f} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trace", required=True)
    p.add_argument("--format")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--readings", default="any", help="google2011 terminal= values (any: default)")
    p.add_argument("--catalogs", default="m4,aws-2017-cmr")
    p.add_argument("--schedulers", default="stratus,stratus-oracle,fleet,karpenter,hotspot")
    p.add_argument("--anti-affinity", default="on", help="on, off or on,off")
    p.add_argument("--markets", default="spot", help="spot, on-demand or both, comma-separated")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--jobs", type=int, default=1, help="replays at once")
    p.add_argument("--table-only", action="store_true")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cells = list(product(*(s.split(",") for s in (args.readings, args.catalogs, args.schedulers,
                                                  args.anti_affinity, args.markets))))
    if not args.table_only:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            for line in ex.map(lambda c: run(args, c), cells):
                print(line, file=sys.stderr, flush=True)
    print("| reading | catalog | scheduler | anti-affinity | market | cost $ | util | idle_shape "
          "| billed vCPU-h by family | latency p50 / p95 | integer bound $ | wall s |")
    print("|---|---|---|---|---|--:|--:|--:|---|---|--:|--:|")
    for cell in cells:
        f = args.out / cell_name(*cell)
        if f.exists():
            print(row(cell, json.loads(f.read_text())))


if __name__ == "__main__":
    main()
