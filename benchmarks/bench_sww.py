"""SWW at the door of the replay's reserved instances (issue 35, item 6): replay wall time
at 1k, 4k and 16k tasks, and its scaling exponent.

    python benchmarks/bench_sww.py [--json]                  # 1k, 4k, 16k (about 2 minutes)
    python benchmarks/bench_sww.py --reference 1000          # and the reference forecast
    python benchmarks/bench_sww.py --workload tiled          # one hour, repeated
    python benchmarks/bench_sww.py --quick                   # small sizes (smoke use)

Workload (``day``, the default): the first N tasks of a Google-like day
(``synthetic:google?scale=0.05``, seed 1: 21,727 tasks, the trace of issue 35's timings:
its 6 and 12 hours were 2,805 and 8,534 tasks). The tasks of a job arrive together (the
bursts that made the forecast quadratic), and the load grows through the morning: queues
of hundreds of tasks by 4k. ``tiled``: one hour of the same generator at scale 0.2 (1,078
tasks in 79 jobs) repeated hour after hour (job ids renumbered) and cut at N tasks: the
same workload, only longer. Each is replayed under the ``stratus`` scheduler (its history
estimator) on spot with ``--reserved m4.10xlarge:4 --waiting sww:b=900``, and under
``njw`` (the same replay with no forecast: the control).

Timed: the engine's run (the summary's ``wall_seconds``) and the CPU seconds of its event
loop (steadier on a shared machine), the best of ``--repeat`` runs (by wall; the
reference runs once). The exponent is the
least-squares slope of log time on log tasks, for each. ``--reference``: SWW with
``stratus.commitments.forecast.reference_wait`` (one whole simulation per task asked, as before
issue 35) at those sizes (minutes at 1k, much longer at 4k); each such row says whether
its summary, wall time aside, is the incremental forecast's to the bit. Prints a table,
or with ``--json`` one JSON document; writes nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from unittest import mock

SIZES = (1000, 4000, 16000)
QUICK = (300, 600)
RESERVED = "m4.10xlarge:4"
POLICIES = ("sww:b=900", "njw")


def workload(name: str, n: int):
    """The first ``n`` tasks of the workload ``name`` (module docstring), as a Trace."""
    import pandas as pd

    from stratus.app.api import synthetic
    from stratus.traces.schema import Trace

    if name == "day":
        frame = synthetic("google", seed=1, scale=0.05, hours=24).frame
    else:
        block = synthetic("google", seed=1, scale=0.2, hours=1).frame
        parts = []
        for c in range(-(-n // len(block))):
            b = block.copy()
            b["job_id"] += c * (int(block["job_id"].max()) + 1)
            b["submit_s"] += c * 3600.0
            parts.append(b)
        frame = pd.concat(parts, ignore_index=True)
    frame = frame.sort_values(["submit_s", "job_id", "task_id"], kind="stable")
    if len(frame) < n:
        raise SystemExit(f"bench_sww: the {name} workload has only {len(frame):,} tasks")
    return Trace(frame.iloc[:n].reset_index(drop=True), name=f"google-{name}-{n}")


def run(trace, policy: str, reference: bool = False) -> dict:
    """One replay; its row: tasks, the engine's seconds, the bill and the split."""
    import stratus.commitments.gate as gate
    import stratus.sim.engine as engine_mod
    from stratus.app.api import replay
    from stratus.commitments.forecast import Forecast, ReferenceForecast
    from stratus.sim.kernel import Kernel

    cpu = [0.0]

    class Timed(Kernel):  # the engine's event loop: its CPU seconds (a subclass: the
        def run(self, *a, **k):  # compiled kernel's methods cannot be patched)
            c0 = time.process_time()
            try:
                return super().run(*a, **k)
            finally:
                cpu[0] += time.process_time() - c0

    with mock.patch.object(gate, "Forecast", ReferenceForecast if reference else Forecast), \
            mock.patch.object(engine_mod, "Kernel", Timed):
        s = replay(trace, "stratus", reserved=RESERVED, waiting=policy).summary
    cpu = cpu[0]
    w = s["waiting"]
    return {"policy": policy.split(":")[0] + (" (reference)" if reference else ""),
            "tasks": s["tasks"], "wall_s": s["wall_seconds"], "cpu_s": round(cpu, 3),
            "tasks_per_s": round(s["tasks"] / s["wall_seconds"], 1) if s["wall_seconds"] else None,
            "total_cost_usd": s["total_cost_usd"], "tasks_cloud": w["gate_turned_away"],
            "mean_wait_s": w["mean_wait_s"],
            "summary": {k: v for k, v in s.items() if k != "wall_seconds"}}


def best_of(trace, policy: str, repeat: int, reference: bool = False) -> dict:
    rows = [run(trace, policy, reference) for _ in range(repeat)]
    return min(rows, key=lambda r: r["wall_s"])


def exponent(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log y on log x; None under two distinct x."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len({x for x, _ in pts}) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    return round(sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts), 3)


def _sizes(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"bench_sww: sizes are task counts like 1000,4000, got {text!r}") from None
    if any(n < 1 for n in out):
        raise SystemExit(f"bench_sww: sizes must be positive, got {text!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", default=",".join(map(str, SIZES)),
                    help="task counts (default 1000,4000,16000)")
    ap.add_argument("--workload", choices=("day", "tiled"), default="day")
    ap.add_argument("--reference", default="",
                    help="task counts at which to time the reference forecast too")
    ap.add_argument("--repeat", type=int, default=3, help="runs per size, the best kept (3)")
    ap.add_argument("--quick", action="store_true",
                    help=f"sizes {','.join(map(str, QUICK))}, the reference at the first")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        raise SystemExit("bench_sww: --repeat must be at least 1")
    sizes = list(QUICK) if args.quick else _sizes(args.tasks)
    repeat = 1 if args.quick else args.repeat
    ref_sizes = QUICK[:1] if args.quick else _sizes(args.reference) if args.reference else []

    rows, ref_rows = [], []
    for n in sorted(set(sizes) | set(ref_sizes)):
        trace = workload(args.workload, n)
        here = {}
        for policy in POLICIES if n in sizes else POLICIES[:1]:
            here[policy] = best_of(trace, policy, repeat)
            if n in sizes:
                rows.append(here[policy])
            print(f"{n:,} tasks {policy}: {here[policy]['wall_s']:.2f} s", file=sys.stderr,
                  flush=True)
        if n in ref_sizes:
            r = best_of(trace, POLICIES[0], 1, reference=True)
            r["same_as_incremental"] = r["summary"] == here[POLICIES[0]]["summary"]
            ref_rows.append(r)
            print(f"{n:,} tasks sww (reference): {r['wall_s']:.2f} s, same bill: "
                  f"{r['same_as_incremental']}", file=sys.stderr, flush=True)
    scaling, scaling_cpu = {}, {}
    for policy in POLICIES:
        pol = policy.split(":")[0]
        scaling[pol] = exponent([(r["tasks"], r["wall_s"]) for r in rows if r["policy"] == pol])
        scaling_cpu[pol] = exponent([(r["tasks"], r["cpu_s"]) for r in rows
                                     if r["policy"] == pol])
    doc = {"benchmark": "sww", "workload": args.workload, "reserved": RESERVED,
           "policies": list(POLICIES), "scheduler": "stratus", "sizes": sizes,
           "runs": [{k: v for k, v in r.items() if k != "summary"} for r in rows],
           "reference": [{k: v for k, v in r.items() if k != "summary"} for r in ref_rows],
           "scaling_exponent": scaling, "scaling_exponent_cpu": scaling_cpu,
           "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(),
                       "load_average_at_end": [round(x, 2) for x in os.getloadavg()]
                       if hasattr(os, "getloadavg") else None}}
    if args.json:
        print(json.dumps(doc))
    else:
        print(table(doc))
    return 0 if all(r["same_as_incremental"] for r in ref_rows) else 1


def table(doc: dict) -> str:
    head = ("policy", "tasks", "wall s", "cpu s", "tasks/s", "cost $", "to cloud",
            "mean wait s")
    body = [(r["policy"], f"{r['tasks']:,}", f"{r['wall_s']:.3f}", f"{r['cpu_s']:.2f}",
             f"{r['tasks_per_s']:,.0f}",
             f"{r['total_cost_usd']:.2f}", f"{r['tasks_cloud']:,}", f"{r['mean_wait_s']:.1f}")
            for r in doc["runs"] + doc["reference"]]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(line, widths))) for line in (head, *body)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += ["", f"scaling exponent of wall time in tasks ({doc['workload']} workload, "
              f"log-log least squares over {', '.join(f'{n:,}' for n in doc['sizes'])})"]
    lines += [f"  {p:<4} wall {e if e is not None else '-'}, "
              f"cpu {doc['scaling_exponent_cpu'][p] if doc['scaling_exponent_cpu'][p] is not None else '-'}"
              for p, e in doc["scaling_exponent"].items()]
    lines.append(f"load average at the end: {doc['machine']['load_average_at_end']}")
    for r in doc["reference"]:
        lines.append(f"reference at {r['tasks']:,} tasks: {r['wall_s']:.2f} s, the same "
                     f"summary as the incremental forecast: {r['same_as_incremental']}")
    return "\n".join(lines)


if __name__ == "__main__":
    t0 = time.perf_counter()
    code = main()
    print(f"bench_sww: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    sys.exit(code)
