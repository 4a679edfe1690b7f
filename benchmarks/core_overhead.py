"""What the engine core's add-on hooks cost a replay with none (issue 37): old tree vs new;
and what the compiled core gains over its pure reference (issue 39): one tree, two cores.

    python benchmarks/core_overhead.py --old /work/main --new .          # best of 3 each
    python benchmarks/core_overhead.py --old /work/main --new . --json --reps 5

One trace (``synthetic:google`` at ``--scale``, ``--hours``, seed 1, fitted to m4 as the CLI
does) is replayed under each scheduler, once per run in a fresh process whose import path
puts the tree first (so each run imports that tree's ``stratus``). Runs alternate trees
(old, new, old, new, ...) so drift on a shared machine falls on both. Only ``Engine.run()``
is timed (wall and CPU of the process); the engine is built outside the timer. Per tree and
scheduler the best of ``--reps`` runs is kept; the ratio is old / new (>= 1: new as fast).
Each run's summary, less ``wall_seconds``, is hashed: old and new must agree.

    python benchmarks/core_overhead.py --old /work/old --new . --trace /work/rw.parquet

With ``--trace FILE`` (the real window, converted once with ``stratus traces convert``) the
whole process is timed instead: ``stratus replay --trace FILE --scheduler S --seed 1 --json``
under each tree, wall and CPU (user + sys of each child, from its ``wait4``), with one hash
seed for both. Each pair runs one after the other (alternating which first); the ratio is
the median over the pairs of old CPU / new CPU. (``--together`` runs a pair at once, one
per core: measured noisier here, the two processes share caches and memory bandwidth.)
``--callgrind`` counts each process's instructions under valgrind instead (deterministic;
about 50x slower, so with ``--window-hours 2`` and ``--reps 1``).

    python benchmarks/core_overhead.py --pure-vs-compiled --new . --trace /work/rw.parquet

``--pure-vs-compiled``: "old" is the tree ``--new`` under STRATUS_PURE_PYTHON=1, "new" the
same tree with its compiled core (each process's kernel is checked); each run's peak
resident memory is reported too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SCHEDULERS = ("stratus", "task-per-instance")


def child(scheduler: str, scale: float, hours: float) -> None:
    from stratus.app.registry import make_scheduler
    from stratus.pricing.catalog_files import get_catalog
    from stratus.sim.engine import Engine, ReplayConfig
    from stratus.traces import synthetic
    from stratus.traces.schema import fit_to_catalog

    trace = fit_to_catalog(synthetic.generate("google", scale=scale, hours=hours, seed=1),
                           get_catalog("m4"), False)
    eng = Engine(trace, make_scheduler(scheduler), ReplayConfig(seed=1))
    c0, t0 = time.process_time(), time.perf_counter()
    res = eng.run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "tasks": res.summary["tasks"],
                      "digest": _digest(res.summary),
                      "stratus": __import__("stratus").__file__}))


def _digest(summary: dict) -> str:
    """The summary less its wall times, hashed: old and new must agree."""
    keep = {k: v for k, v in summary.items() if k != "wall_seconds"}
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()[:16]


PURE_ENV = "STRATUS_PURE_PYTHON"


def run_one(tree: Path, scheduler: str, scale: float, hours: float,
            extra: dict | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), **(extra or {})}
    out = subprocess.run([sys.executable, __file__, "--child", scheduler, "--scale", str(scale),
                          "--hours", str(hours)], env=env, cwd=tree, check=True,
                         capture_output=True, text=True).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    if not doc["stratus"].startswith(str(tree.resolve())):
        raise SystemExit(f"run of {tree} imported {doc['stratus']}")
    return doc


def _start(tree: Path, scheduler: str, trace: Path, out, err, hours: float | None,
           callgrind: str | None, extra: dict | None = None) -> subprocess.Popen:
    # one hash seed for both trees: set and dict layouts alike, one noise the fewer
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0", **(extra or {})}
    code = ("import sys, stratus; from stratus.app.cli import entry; "
            "from stratus.sim.kernel import Kernel; "
            "sys.stderr.write('STRATUS ' + stratus.__file__ + '\\n'); "
            "sys.stderr.write('KERNEL ' + Kernel.__module__ + '\\n'); entry()")
    argv = [sys.executable, "-c", code, "replay", "--trace", str(trace), "--scheduler",
            scheduler, "--seed", "1", "--json"]
    if hours:
        argv += ["--hours", str(hours)]
    if callgrind:  # instructions, not seconds: deterministic on a noisy machine
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind}", *argv]
    return subprocess.Popen(argv, env=env, cwd=tree, stdout=out, stderr=err, text=True)


def _instructions(path: str) -> int:
    """The program's total instructions (Ir) in a callgrind output file."""
    with open(path) as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise SystemExit(f"{path}: no totals line")


def run_pair(trees: dict[str, Path], scheduler: str, trace: Path,
             together: bool = False, hours: float | None = None,
             callgrind: bool = False, envs: dict[str, dict] | None = None) -> dict[str, dict]:
    """One whole ``stratus replay`` process of each tree on ``trace``, one after the other
    in the order given (``together``: both at once, one per core); each one's wall time
    and CPU (user + sys, from its own ``wait4``)."""
    import tempfile
    from contextlib import ExitStack

    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        files, procs, started, done = {}, {}, {}, {}

        def wait() -> None:
            pid, status, ru = os.wait4(-1, 0)
            name = next(n for n, p in procs.items() if p.pid == pid)
            procs[name].returncode = os.waitstatus_to_exitcode(status)
            done[name] = {"wall_s": time.perf_counter() - started[name],
                          "cpu_s": ru.ru_utime + ru.ru_stime,
                          "peak_rss_mib": ru.ru_maxrss / 1024}

        for name, tree in trees.items():
            out, err = (stack.enter_context(open(f"{tmp}/{name}.{x}", "w+"))
                        for x in ("out", "err"))
            files[name] = (out, err)
            started[name] = time.perf_counter()
            cg = f"{tmp}/{name}.callgrind" if callgrind else None
            procs[name] = _start(tree, scheduler, trace, out, err, hours, cg,
                                 (envs or {}).get(name))
            if not together:
                wait()
        while len(done) < len(procs):
            wait()
        for name, (out, err) in files.items():
            out.seek(0), err.seek(0)
            text, log = out.read(), err.read()
            if procs[name].returncode:
                raise SystemExit(f"{trees[name]}: {scheduler} exited "
                                 f"{procs[name].returncode}: {log[-500:]}")
            where = [ln for ln in log.splitlines() if ln.startswith("STRATUS ")][0][8:]
            if not where.startswith(str(trees[name].resolve())):
                raise SystemExit(f"run of {trees[name]} imported {where}")
            kernel = [ln for ln in log.splitlines() if ln.startswith("KERNEL ")][0][7:]
            pure = (envs or {}).get(name, {}).get(PURE_ENV)
            if pure is not None and (kernel == "stratus.sim.kernel") != (pure == "1"):
                raise SystemExit(f"{name} ({PURE_ENV}={pure}) ran the kernel of {kernel}")
            done[name]["kernel"] = kernel
            summary = json.loads(text)
            summary = summary.get("summary", summary)
            done[name].update(tasks=summary.get("tasks"), digest=_digest(summary),
                              engine_s=summary.get("wall_seconds"))
            if callgrind:
                done[name]["instructions"] = _instructions(f"{tmp}/{name}.callgrind")
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", type=Path, required=False, default=Path("/work/main"))
    ap.add_argument("--new", type=Path, required=False, default=Path("."))
    ap.add_argument("--scale", type=float, default=0.05)
    ap.add_argument("--hours", type=float, default=6.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", metavar="SCHEDULER")
    ap.add_argument("--trace", type=Path, help="time whole replays of this trace file")
    ap.add_argument("--together", action="store_true",
                    help="with --trace: run each pair at once, one per core")
    ap.add_argument("--window-hours", type=float,
                    help="with --trace: replay only this many hours of it (--hours)")
    ap.add_argument("--pure-vs-compiled", action="store_true",
                    help="old: the tree --new under STRATUS_PURE_PYTHON=1; new: its compiled core")
    ap.add_argument("--callgrind", action="store_true",
                    help="with --trace: count instructions under valgrind (about 50x slower; "
                         "a pair runs at once)")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.scale, a.hours)
        return
    trees = {"old": a.old.resolve(), "new": a.new.resolve()}
    envs: dict[str, dict] = {}
    if a.pure_vs_compiled:
        trees["old"] = trees["new"]
        envs = {"old": {PURE_ENV: "1"}, "new": {PURE_ENV: "0"}}
    rows = []
    for sched in a.schedulers.split(","):
        runs: dict[str, list[dict]] = {"old": [], "new": []}
        for rep in range(a.reps):
            order = ("old", "new") if rep % 2 == 0 else ("new", "old")
            if a.trace:
                pair = run_pair({n: trees[n] for n in order}, sched, a.trace,
                                a.together or a.callgrind, a.window_hours, a.callgrind, envs)
                for name in order:
                    runs[name].append(pair[name])
                continue
            for name in order:
                runs[name].append(run_one(trees[name], sched, a.scale, a.hours,
                                          envs.get(name)))
        best = {n: min(r["wall_s"] for r in rs) for n, rs in runs.items()}
        best_cpu = {n: min(r["cpu_s"] for r in rs) for n, rs in runs.items()}
        digests = {n: {r["digest"] for r in rs} for n, rs in runs.items()}
        rows.append({"scheduler": sched, "tasks": runs["old"][0]["tasks"],
                     "old_best_s": round(best["old"], 3), "new_best_s": round(best["new"], 3),
                     "ratio_old_over_new": round(best["old"] / best["new"], 4),
                     "old_best_cpu_s": round(best_cpu["old"], 3),
                     "new_best_cpu_s": round(best_cpu["new"], 3),
                     "cpu_ratio_old_over_new": round(best_cpu["old"] / best_cpu["new"], 4),
                     "old_runs_s": [round(r["wall_s"], 3) for r in runs["old"]],
                     "new_runs_s": [round(r["wall_s"], 3) for r in runs["new"]],
                     "old_runs_cpu_s": [round(r["cpu_s"], 3) for r in runs["old"]],
                     "new_runs_cpu_s": [round(r["cpu_s"], 3) for r in runs["new"]],
                     "same_summary": digests["old"] == digests["new"] and len(digests["old"]) == 1,
                     **({"old_peak_rss_mib": round(max(r["peak_rss_mib"] for r in runs["old"]), 1),
                         "new_peak_rss_mib": round(max(r["peak_rss_mib"] for r in runs["new"]), 1),
                         "old_engine_s": [r["engine_s"] for r in runs["old"]],
                         "new_engine_s": [r["engine_s"] for r in runs["new"]]}
                        if a.trace else {}),
                     # per pair (run at once with --trace): old / new CPU, and their median
                     "pair_cpu_ratios": [round(o["cpu_s"] / n["cpu_s"], 4)
                                         for o, n in zip(runs["old"], runs["new"])],
                     "median_pair_cpu_ratio": round(statistics.median(
                         o["cpu_s"] / n["cpu_s"] for o, n in zip(runs["old"], runs["new"])), 4),
                     **({"old_instructions": [r["instructions"] for r in runs["old"]],
                         "new_instructions": [r["instructions"] for r in runs["new"]],
                         "instruction_ratio_old_over_new": round(
                             runs["old"][0]["instructions"] / runs["new"][0]["instructions"], 4)}
                        if a.callgrind else {})})
    what = str(a.trace) if a.trace else f"synthetic:google?scale={a.scale:g}&hours={a.hours:g}"
    doc = {"trace": what, "timed": "whole process" if a.trace else "Engine.run()", "reps": a.reps,
           "old": str(trees["old"]), "new": str(trees["new"]), "envs": envs, "rows": rows}
    if a.json:
        print(json.dumps(doc))
        return
    print(f"{doc['trace']}, best of {a.reps} (wall s of {doc['timed']}; ratio old/new)")
    print(f"{'scheduler':<20}{'tasks':>8}{'old s':>10}{'new s':>10}{'ratio':>8}"
          f"{'cpu ratio':>11}  same summary")
    for r in rows:
        print(f"{r['scheduler']:<20}{r['tasks']:>8}{r['old_best_s']:>10.3f}"
              f"{r['new_best_s']:>10.3f}{r['ratio_old_over_new']:>8.3f}"
              f"{r['cpu_ratio_old_over_new']:>11.3f}  {r['same_summary']}")


if __name__ == "__main__":
    main()
