"""Degradation under the cloud's own faults (issue 9): replays of one trace under
schedulers and ``--faults`` settings, one at a time, as a table.

    python benchmarks/bench_faults.py --trace ../shared/data/google-2011 \\
        --format "google2011?window_start_s=600&window_hours=19" --seed 1 \\
        --out /tmp/faults_runs                     # runs what is missing, prints the table

Each replay is ``stratus replay ... --json`` in a child process; its JSON is kept in
``--out`` (``SCHEDULER.FAULTS.json``), so an interrupted sweep resumes and ``--table-only``
reprints the table from what is there.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

DEFAULT_FAULTS = ["none", "crash:0.01", "crash:0.05", "crash:0.2", "ice:0.2,ice-window:900"]


def run(args, sched: str, faults: str, out: Path) -> None:
    cmd = [sys.executable, "-m", "stratus.app.cli", "replay", "--trace", args.trace,
           "--seed", str(args.seed), "--scheduler", sched, "--json", "--no-progress"]
    if args.format:
        cmd += ["--format", args.format]
    if faults != "none":
        cmd += ["--faults", faults]
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w") as fh:
        subprocess.run(cmd, stdout=fh, check=True)
    tmp.rename(out)


def row(sched: str, faults: str, d: dict) -> str:
    f = d.get("faults") or {}
    lat = d["latency"]
    done = "yes" if d["tasks_completed"] == d["tasks"] else f"no ({d['tasks_unfinished']:,})"
    return (f"| {sched} | {faults} | {d['total_cost_usd']:,.2f} | "
            f"{d['utilization']['constraining']:.4f} | {lat['p50']} / {lat['p95']} | "
            f"{f.get('crashes', 0):,} | {f.get('tasks_restarted', 0):,} | "
            f"{f.get('lost_task_seconds', 0) / 3600:,.0f} | {f.get('lost_usd', 0):,.2f} | "
            f"{f.get('ice_failures', 0):,} | {done} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trace", required=True)
    p.add_argument("--format")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--schedulers", default="stratus,task-per-instance")
    p.add_argument("--faults", default=";".join(DEFAULT_FAULTS),
                   help="settings separated by ';' ('none': no --faults)")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--table-only", action="store_true")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print("| scheduler | faults | cost $ | util | latency p50 / p95 | crashes | restarts "
          "| lost task-h | lost $ | ICE failures | all done |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for sched in args.schedulers.split(","):
        for faults in args.faults.split(";"):
            out = args.out / f"{sched}.{faults}.json"
            if not out.exists() and not args.table_only:
                run(args, sched, faults, out)
            if out.exists():
                print(row(sched, faults, json.loads(out.read_text())), flush=True)


if __name__ == "__main__":
    main()
