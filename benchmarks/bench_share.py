"""How long paper 004's provisioning sweep takes on the NASA iPSC/860 log (issue 14: a full
three-policy sweep over 21 values of N in under 10 s): in process (load, then the sweep)
and as one ``stratus share sweep --json`` process, start-up and loading included.

    python benchmarks/bench_share.py [--trace FILE] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NASA = ROOT / "tests" / "data" / "NASA-iPSC-1993-3.1-cln.swf.gz"
GRID = list(range(0, 161, 8))  # 21 values of N
POLICIES = ["lift-and-shift", "burst-wait", "burst-nowait"]


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from stratus.sharing.analyses import sweep
    from stratus.sharing.cluster import Cluster, workload_from_frame
    from stratus.traces import swf

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", default=str(NASA))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    w = workload_from_frame(swf.load(args.trace).frame, Path(args.trace).name)
    load_s = time.perf_counter() - t0
    sweeps, cpu = [], []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        doc = sweep(w, Cluster(ratio=0.4), POLICIES, GRID)
        sweeps.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)  # the machine may be shared: CPU time too
    cli = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "stratus.app.cli", "share", "sweep", "--trace",
                        args.trace, "--reserved", "0:160:8", "--json"], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cli.append(time.perf_counter() - t0)
    out = {"trace": Path(args.trace).name, "jobs": w.n, "runs": len(POLICIES) * len(GRID),
           "load_s": round(load_s, 3), "sweep_s_best": round(min(sweeps), 3),
           "sweep_s_all": [round(s, 3) for s in sweeps],
           "sweep_cpu_s_best": round(min(cpu), 3), "cli_s_best": round(min(cli), 3),
           "cli_s_all": [round(s, 3) for s in cli], "optimal": doc["optimal"]}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{out['trace']}: {out['jobs']:,} jobs, {out['runs']} pool runs (3 policies x "
              f"21 N)\n  load {out['load_s']} s; sweep best {out['sweep_s_best']} s of "
              f"{out['sweep_s_all']} (CPU {out['sweep_cpu_s_best']} s); whole CLI process best {out['cli_s_best']} s of "
              f"{out['cli_s_all']}")


if __name__ == "__main__":
    main()
