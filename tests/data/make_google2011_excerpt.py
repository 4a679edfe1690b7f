"""Rebuild ``google2011-excerpt/``: every event of the Google 2011 jobs submitted in one
20-minute stretch, in the raw layout the ``google2011`` loader reads.

    python tests/data/make_google2011_excerpt.py [--source DIR] [--start-s S] [--minutes M]

Source: ``../shared/data/google-2011`` next to the project root (clusterdata-2011-2, Google,
CC-BY 4.0). A job is selected when its first SUBMIT in ``job_events`` falls in
[start, start + minutes). Every line of a selected job, task and job events alike, is copied
byte for byte, in the source's order (parts by name, then line), into one part per table
(``part-00000-of-00500.csv.gz``), so the loader's rules (ordering, resubmission, still
running, ...) see exactly what they would see in the full trace. No randomness; gzip
without a name or time stamp, so the output is byte-stable.
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / ".." / "shared" / "data" / "google-2011"
OUT = Path(__file__).resolve().parent / "google2011-excerpt"
PART = "part-00000-of-00500.csv.gz"
# 2 h 20 min into the trace, 20 minutes: 234 jobs, 3,870 tasks (the loader keeps 233 jobs,
# 3,839 tasks: one job's 31 tasks were never scheduled)
START_S, MINUTES = 8400, 20
SUBMIT = b"0"


def parts(source: Path, table: str) -> list[Path]:
    found = sorted((source / table).glob("part-*.csv.gz"))
    if not found:
        raise SystemExit(f"{source / table}: no part-*.csv.gz files")
    return found


def selected_jobs(source: Path, start_us: int, end_us: int) -> set[bytes]:
    """Job ids (as the file spells them) whose first job SUBMIT is in [start_us, end_us)."""
    first: dict[bytes, int] = {}
    for path in parts(source, "job_events"):
        with gzip.open(path, "rb") as fh:
            for line in fh:
                f = line.split(b",", 4)
                if f[3] == SUBMIT:
                    ts = int(f[0])
                    if ts < first.get(f[2], ts + 1):
                        first[f[2]] = ts
    return {job for job, ts in first.items() if start_us <= ts < end_us}


def copy_events(source: Path, table: str, jobs: set[bytes], out: Path) -> int:
    """Every line of ``table`` whose job id (third field) is in ``jobs``; lines written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with out.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                              compresslevel=9, mtime=0) as gz:
        for path in parts(source, table):
            with gzip.open(path, "rb") as fh:
                for line in fh:
                    if line.split(b",", 3)[2] in jobs:
                        gz.write(line)
                        n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--start-s", type=int, default=START_S, help="stretch start, trace seconds")
    ap.add_argument("--minutes", type=int, default=MINUTES, help="stretch length")
    args = ap.parse_args()
    start_us = args.start_s * 1_000_000
    jobs = selected_jobs(args.source, start_us, start_us + args.minutes * 60_000_000)
    n_task = copy_events(args.source, "task_events", jobs, args.out / "task_events" / PART)
    n_job = copy_events(args.source, "job_events", jobs, args.out / "job_events" / PART)
    size = sum(p.stat().st_size for p in args.out.rglob("*.csv.gz"))
    print(f"{len(jobs)} jobs: {n_task} task events, {n_job} job events, {size} bytes "
          f"in {args.out}")


if __name__ == "__main__":
    main()
