"""Google 2011 conversion: wall time and peak memory on a synthetic raw trace.

    python benchmarks/bench_google_convert.py                   # 2M task events, temp dir
    python benchmarks/bench_google_convert.py --rows 500000 --memory-limit 256MB --json
    python benchmarks/bench_google_convert.py --dir /data/g11 --keep

Writes ``task_events/`` and ``job_events/`` as gzip CSV parts in the real v2.1 layout,
generated in chunks with numpy (the generator never holds the whole trace): per task
SUBMIT -> SCHEDULE -> FINISH, with some evictions (resubmitted), kills, failures, tasks
killed while pending, tasks still running and jobs from before the trace. Events are
shuffled inside each chunk and some land in a neighbouring part, so the files are out of
timestamp order within and across parts. The conversion runs in a child process, which
reports its own peak RSS (VmHWM); the raw size is printed next to it for scale.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SPAN_S = 29 * 86400.0  # the 2011 trace covers 29 days
START_S = 600.0  # its first events are at 600 s
TASKS_PER_CHUNK = 50_000
SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL = 0, 1, 2, 3, 4, 5

# The child reports VmHWM (its own peak RSS since exec). ru_maxrss is printed too, but on
# Linux it also carries the forking parent's RSS at fork time, which here is the generator.
CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from stratus.traces.google2011 import convert
import pyarrow.parquet as pq

def hwm_kib():
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

base = hwm_kib()
t0 = time.perf_counter()
rep = convert(sys.argv[2], sys.argv[3], memory_limit=sys.argv[4], threads=sys.argv[5] or None)
wall = time.perf_counter() - t0
print(json.dumps({"wall_s": wall, "rss_before_kib": base, "peak_rss_kib": hwm_kib(),
                  "rows_in": rep.rows_read, "rows_out": pq.read_metadata(sys.argv[3]).num_rows,
                  "dropped": rep.dropped}))
"""


# --- generator -----------------------------------------------------------------------

def task_kinds(rng, n: int) -> np.ndarray:
    """0 finish, 1 evicted+resubmitted, 2 killed, 3 failed, 4 killed pending, 5 running."""
    return rng.choice(6, size=n, p=[0.80, 0.06, 0.06, 0.03, 0.03, 0.02])


def chunk_events(rng, first_job: int, n_tasks: int, t0: float, t1: float) -> pd.DataFrame:
    """Events of ``n_tasks`` tasks in jobs submitted in [t0, t1), grouped by task."""
    sizes = np.minimum(rng.geometric(0.25, size=n_tasks), 40)
    sizes = sizes[np.cumsum(sizes) <= n_tasks]
    n = int(sizes.sum())
    job = first_job + np.repeat(np.arange(sizes.size), sizes)
    idx = np.arange(n) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    submit = np.repeat(rng.uniform(t0, t1, sizes.size), sizes)
    wait = rng.exponential(5.0, n)
    run = np.maximum(rng.lognormal(np.log(60.0), 1.2, n), 0.001)
    kind = task_kinds(rng, n)
    cpu = np.repeat(rng.choice([0.00625, 0.0125, 0.025, 0.0625, 0.125, 0.25], sizes.size), sizes)
    mem = np.repeat(rng.uniform(0.0005, 0.1, sizes.size).round(5), sizes)
    sched = submit + wait
    end = sched + run
    ev = [(submit, SUBMIT, kind >= 0)]  # every task
    ev.append((sched, SCHEDULE, kind != 4))
    ev.append((end, FINISH, kind == 0))
    ev.append((end, KILL, kind == 2))
    ev.append((end, FAIL, kind == 3))
    ev.append((sched + 10.0, KILL, kind == 4))
    # evicted after part of the run, resubmitted at once, rescheduled, then finished
    evict = sched + run * 0.3
    ev += [(evict, EVICT, kind == 1), (evict, SUBMIT, kind == 1),
           (evict + wait, SCHEDULE, kind == 1), (evict + wait + run, FINISH, kind == 1)]
    parts = []
    for ts, etype, mask in ev:
        sel = np.flatnonzero(mask)
        parts.append(pd.DataFrame({
            "ts": (ts[sel] * 1e6).astype(np.int64), "missing": pd.array([pd.NA] * sel.size,
                                                                           dtype="Int64"),
            "job": job[sel], "task": idx[sel], "machine": rng.integers(1, 12_500, sel.size),
            "type": etype, "user": "u" + (job[sel] % 900).astype(str), "cls": 1,
            "prio": job[sel] % 12, "cpu": cpu[sel], "mem": mem[sel], "disk": 0.0001,
            "diff": 0}))
    frame = pd.concat(parts, ignore_index=True)
    old = np.isin(frame["job"].to_numpy(), first_job + np.arange(0, sizes.size, 200))
    frame.loc[old & (frame["type"].to_numpy() <= SCHEDULE), "ts"] = 0  # before the trace
    return frame.sort_values(["job", "task", "ts"], kind="stable", ignore_index=True)


def part_of(ts_us: np.ndarray, parts: int, rng) -> np.ndarray:
    """The part an event is written to: by time, with 2% pushed to a neighbour."""
    p = np.clip(((ts_us / 1e6 - START_S) / SPAN_S * parts).astype(int), 0, parts - 1)
    jitter = rng.choice([-1, 0, 1], size=p.size, p=[0.01, 0.98, 0.01])
    return np.clip(p + jitter, 0, parts - 1)


def write_trace(out: Path, rows: int, parts: int, seed: int) -> dict:
    """Write ``rows`` task events and their job events; return sizes."""
    rng = np.random.default_rng(seed)
    (out / "task_events").mkdir(parents=True, exist_ok=True)
    (out / "job_events").mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        tfiles = [stack.enter_context(gzip.open(
            out / "task_events" / f"part-{i:05d}-of-{parts:05d}.csv.gz", "wt", compresslevel=3))
            for i in range(parts)]
        jfiles = [stack.enter_context(gzip.open(
            out / "job_events" / f"part-{i:05d}-of-00002.csv.gz", "wt", compresslevel=3))
            for i in range(2)]
        written, raw_bytes = write_chunks(rng, tfiles, jfiles, rows, parts)
    gz_bytes = sum(p.stat().st_size for p in out.rglob("*.gz"))
    return {"rows_written": written, "raw_mib": raw_bytes / 2**20, "gz_mib": gz_bytes / 2**20}


def write_chunks(rng, tfiles, jfiles, rows: int, parts: int) -> tuple[int, int]:
    """Generate and append chunk after chunk of tasks until ``rows`` events are written."""
    n_chunks = max(1, int(np.ceil(rows / (TASKS_PER_CHUNK * 3.2))))
    written = raw_bytes = 0
    job = 6_000_000_000
    for c in range(n_chunks + 10):  # a few spare chunks in case sizes come out small
        if written >= rows:
            break
        t0 = START_S + SPAN_S * c / n_chunks * 0.97
        frame = chunk_events(rng, job, TASKS_PER_CHUNK, t0, t0 + SPAN_S / n_chunks * 0.97)
        # cut whole lifecycles (only the last task may lose its end), then lie about order
        frame = frame.iloc[: rows - written].sample(frac=1.0, random_state=c)
        job = int(frame["job"].max()) + 1
        written += len(frame)
        where = part_of(frame["ts"].to_numpy(), parts, rng)
        for i in np.unique(where):
            text = frame[where == i].to_csv(header=False, index=False, float_format="%.6g")
            raw_bytes += len(text)
            tfiles[i].write(text)
        raw_bytes += write_jobs(jfiles, frame, rng)
    return written, raw_bytes


def write_jobs(files, frame: pd.DataFrame, rng) -> int:
    """SUBMIT and FINISH per job; half the jobs carry a logical name."""
    g = frame.groupby("job")["ts"].agg(["min", "max"])
    n = len(g)
    logical = np.where(rng.random(n) < 0.5, "prog" + (g.index.to_numpy() % 5000).astype(str), "")
    jobs = pd.DataFrame({"ts": np.concatenate([g["min"], g["max"]]),
                         "missing": "", "job": np.tile(g.index, 2),
                         "type": np.repeat([SUBMIT, FINISH], n),
                         "user": "u" + (np.tile(g.index, 2) % 900).astype(str), "cls": 1,
                         "name": "name" + np.tile(g.index, 2).astype(str),
                         "logical": np.tile(logical, 2)})
    text = jobs.to_csv(header=False, index=False)
    files[int(rng.integers(2))].write(text)
    return len(text)


# --- measurement ---------------------------------------------------------------------

def run_conversion(trace: Path, out: Path, memory_limit: str, threads: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), str(trace), str(out),
                           memory_limit, threads], capture_output=True, text=True, check=False)
    if proc.returncode:
        raise SystemExit(f"conversion failed:\n{proc.stderr}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["children_maxrss_kib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000, help="task events to write")
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", type=Path, help="write the trace here (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated trace")
    ap.add_argument("--memory-limit", default="1GB")
    ap.add_argument("--threads", default="")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    base = args.dir or Path(tempfile.mkdtemp(prefix="bench-g2011-"))
    try:
        t0 = time.perf_counter()
        sizes = write_trace(base / "trace", args.rows, args.parts, args.seed)
        gen_s = time.perf_counter() - t0
        res = run_conversion(base / "trace", base / "out.parquet", args.memory_limit,
                             args.threads)
    finally:
        if not (args.keep or args.dir):
            shutil.rmtree(base, ignore_errors=True)
    out = {"rows_in": res["rows_in"], "rows_out": res["rows_out"],
           "generate_s": round(gen_s, 2), "convert_wall_s": round(res["wall_s"], 2),
           "rows_per_s": round(res["rows_in"] / res["wall_s"]),
           "peak_rss_mib": round(res["peak_rss_kib"] / 1024, 1),
           "rss_after_import_mib": round(res["rss_before_kib"] / 1024, 1),
           "children_maxrss_mib": round(res["children_maxrss_kib"] / 1024, 1),
           "raw_csv_mib": round(sizes["raw_mib"], 1), "gzip_mib": round(sizes["gz_mib"], 1),
           "memory_limit": args.memory_limit, "dropped": res["dropped"]}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for k, v in out.items():
            print(f"{k:>22}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
