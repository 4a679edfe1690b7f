"""Write an SWF-like log (Standard Workload Format 2.2) from one of the project's synthetic
generators, for paper 004's analyses when no second Parallel Workloads Archive log is at
hand: each generated job becomes one rigid SWF job needing ceil(sum of its tasks' cores)
processors for its longest task's runtime, submitted with the job, with the generator's
user as the SWF user ID. Not a real log: say so wherever its numbers are used.

    python benchmarks/make_swf_like.py "synthetic:twosigma?scale=0.4&hours=168&seed=1" OUT.swf
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from stratus.traces.synthetic import from_spec

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("spec")
    ap.add_argument("out")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    if out.exists() and not args.force:
        sys.exit(f"{out} exists; --force to replace it")
    tr = from_spec(args.spec)
    f = tr.frame
    g = f.groupby("job_id", sort=False).agg(
        submit=("submit_s", "min"), runtime=("runtime_s", "max"), cpu=("cpu", "sum"),
        user=("user", "first")).reset_index()
    g = g.sort_values(["submit", "job_id"], kind="stable").reset_index(drop=True)
    users = {u: i + 1 for i, u in enumerate(sorted(g["user"].astype(str).unique()))}
    procs = np.ceil(g["cpu"].to_numpy() - 1e-9).astype(np.int64).clip(min=1)
    t0 = float(g["submit"].iloc[0])
    lines = ["; Version: 2.2",
             f"; Computer: SWF-like load from {args.spec} (benchmarks/make_swf_like.py)",
             "; Note: synthetic, not a Parallel Workloads Archive log; one job per generated "
             "job, processors = ceil(sum of task cores), run time = longest task",
             f"; MaxProcs: {int(procs.max())}", f"; MaxJobs: {len(g)}", "; UnixStartTime: 0",
             ";"]
    for k, row in enumerate(g.itertuples(index=False)):
        rt = max(0, int(math.ceil(row.runtime)))
        lines.append(f"{k + 1} {int(round(row.submit - t0))} -1 {rt} {procs[k]} -1 -1 "
                     f"{procs[k]} -1 -1 1 {users[str(row.user)]} -1 -1 -1 -1 -1 -1")
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(out)
    print(f"wrote {out}: {len(g):,} jobs, {len(users)} users, largest {int(procs.max())} "
          f"processors, offered {float((procs * g['runtime']).sum()) / max(1.0, float(g['submit'].iloc[-1] - t0)):.1f} cores")


if __name__ == "__main__":
    main()
