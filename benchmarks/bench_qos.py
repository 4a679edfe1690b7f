"""How long QoPS, VQoPS and DVQoPS (paper 001) take on the NASA iPSC/860 log, at the
original load and at the acceptance checklist's high loads (issue 14: any DVQoPS run on
NASA under a minute). Wall and CPU seconds per run; the machine may be shared, so CPU
seconds are the steadier figure.

    python benchmarks/bench_qos.py [--trace FILE] [--dup-fracs 0,0.9,1.7] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from stratus.qos.jobs import build_workload
from stratus.qos.run import run
from stratus.qos.sim import Config
from stratus.traces.spec import TraceSource

NASA = Path(__file__).resolve().parents[2] / "shared" / "data" / "NASA-iPSC-1993-3.1-cln.swf.gz"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", default=str(NASA))
    ap.add_argument("--dup-fracs", default="0,0.9,1.7")
    ap.add_argument("--schemes", default="qops,vqops,dvqops")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    trace = TraceSource(args.trace).full()
    f = trace.frame
    P = int(trace.meta.get("swf_header", {}).get("MaxProcs") or f["cpu"].max())
    rows = []
    for d in (float(x) for x in args.dup_fracs.split(",")):
        wl = build_workload(f["submit_s"], f["runtime_s"], f["cpu"], None, f["job_id"], P=P,
                            dup_frac=d, urgent_frac=0.5, urgent_cost=10.0, seed=1)
        for scheme in args.schemes.split(","):
            cfg = Config(scheme=scheme, oc=0.05 if scheme == "vqops" else 0.0)
            t0, c0 = time.perf_counter(), time.process_time()
            s = run(wl, cfg).summary
            rows.append({"scheme": scheme, "dup_frac": d, "jobs": s["jobs"],
                         "offered_load": s["offered_load"], "accepted": s["accepted"],
                         "wall_s": round(time.perf_counter() - t0, 2),
                         "cpu_s": round(time.process_time() - c0, 2),
                         "whatifs": s.get("whatifs"), "window_replays": s.get("window_replays")})
            if not args.json:
                r = rows[-1]
                print(f"{scheme:7s} d={d:<4g} jobs={r['jobs']:6d} load={r['offered_load']:.3f} "
                      f"wall {r['wall_s']:7.2f} s  cpu {r['cpu_s']:7.2f} s"
                      + (f"  what-ifs {r['whatifs']}" if r["whatifs"] else ""), flush=True)
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
