"""The Eva comparison's table (docs/findings/eva.md) from the rows of its sweeps.

    python benchmarks/eva_comparison_table.py results/eva-synthetic results/eva-google-window \\
        results/eva-alibaba

One markdown row per (trace, catalog, market, scheduler): cost, cost over task-per-instance's
on the same trace, catalog and market, constraining utilization, normalized job latency p50/p95
(completion - submit over the job's longest task, Stratus Table 2), migrations, instances,
idle share of the bill by cause and the cell's wall time. Cells not run are listed as such."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

ORDER = ["stratus", "stratus-oracle", "eva", "eva?partial=false", "fleet", "karpenter",
         "task-per-instance"]


def rows(dirs: list[str]) -> pd.DataFrame:
    frames = [pd.read_parquet(f) for d in dirs for f in sorted(Path(d, "rows").glob("*.parquet"))]
    df = pd.concat(frames, ignore_index=True)
    opts = df["options_json"].map(json.loads)
    df["catalog"] = opts.map(lambda o: o.get("catalog", "m4"))
    df["scheduler"] = df["opt_scheduler"]
    df["market"] = df["opt_market"]
    return df[df["status"] == "ok"] if "status" in df else df


def idle(result: dict) -> str:
    b = result.get("billed_breakdown") or {}
    parts = {k: v for k, v in b.items() if k != "resource" and isinstance(v, (int, float))}
    total = sum(parts.values()) or 1.0
    return ", ".join(f"{k} {v / total:.0%}" for k, v in parts.items() if k != "used" and v > 0)


def table(df: pd.DataFrame) -> str:
    out = ["| trace | catalog | market | scheduler | cost $ | / one per task | util | lat p50 | "
           "lat p95 | migrations | instances | idle share of the bill | wall s |",
           "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for (trace, cat, market), g in df.groupby(["trace_label", "catalog", "market"], sort=True):
        base = g.loc[g["scheduler"] == "task-per-instance", "total_cost_usd"]
        divisor = float(base.iloc[0]) if len(base) else None
        have = {r.scheduler: r for r in g.itertuples()}
        for name in ORDER:
            r = have.get(name)
            if r is None:
                out.append(f"| {trace} | {cat} | {market} | {name} | not run | | | | | | | | |")
                continue
            res = json.loads(r.result_json)
            norm = f"{r.total_cost_usd / divisor:.3f}" if divisor else "n/a"
            out.append(f"| {trace} | {cat} | {market} | {name} | {r.total_cost_usd:,.2f} | {norm} | "
                       f"{r.utilization_constraining:.3f} | {r.latency_p50:.2f} | "
                       f"{r.latency_p95:.2f} | {int(r.migrations):,} | {int(r.instances_acquired):,} | "
                       f"{idle(res)} | {r.wall_seconds:.0f} |")
    return "\n".join(out)


if __name__ == "__main__":
    print(table(rows(sys.argv[1:])))
