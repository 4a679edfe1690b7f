"""A long trace from a short one: a trace file's window repeated back to back (issue 39's
month-scale benchmark: the real Google 2011 window, 387,838 tasks over 19 hours, 38 times
is about a month).

    python benchmarks/repeat_window.py /work/rw.parquet --copies 9 -o /tmp/rw-week.parquet
    python benchmarks/core_overhead.py --pure-vs-compiled --new . --trace /tmp/rw-week.parquet \\
        --schedulers stratus,task-per-instance --reps 1

Copy ``c`` has its job ids moved past the previous copy's and its submit times moved by ``c``
times the window's length rounded up to a whole hour, so the load is the window's, again and
again, with no gap and no overlap beyond the last tasks' runtimes. The schema and metadata of
the input are kept (the name says how many copies).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def repeat(table: pa.Table, copies: int) -> pa.Table:
    submit = table["submit_s"]
    lo, hi = pc.min(submit).as_py(), pc.max(submit).as_py()
    period = math.ceil((hi - lo) / 3600.0 + 1e-9) * 3600.0
    jobs = pc.max(table["job_id"]).as_py() + 1
    parts = []
    for c in range(copies):
        t = table.set_column(table.schema.get_field_index("submit_s"), "submit_s",
                             pc.add(submit, c * period))
        t = t.set_column(t.schema.get_field_index("job_id"), "job_id",
                         pc.add(table["job_id"], c * jobs))
        parts.append(t)
    return pa.concat_tables(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path, help="a trace in the project's Parquet form")
    ap.add_argument("--copies", type=int, required=True)
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--force", action="store_true", help="replace an existing output")
    a = ap.parse_args()
    if a.copies < 1:
        raise SystemExit("repeat_window: --copies must be at least 1")
    if a.output.exists() and not a.force:
        raise SystemExit(f"repeat_window: {a.output} exists (--force replaces it)")
    if a.output.resolve() == a.trace.resolve():
        raise SystemExit("repeat_window: the output would replace the input")
    table = pq.read_table(a.trace)
    out = repeat(table, a.copies)
    meta = dict(table.schema.metadata or {})
    name = meta.get(b"stratus.trace.name", b"trace").decode()
    meta[b"stratus.trace.name"] = f"{name} x{a.copies}".encode()
    out = out.replace_schema_metadata(meta)
    tmp = a.output.with_name(a.output.name + ".tmp")
    pq.write_table(out, tmp)
    tmp.replace(a.output)
    print(f"{a.output}: {out.num_rows:,} tasks, {a.copies} copies of {a.trace}", file=sys.stderr)


if __name__ == "__main__":
    main()
