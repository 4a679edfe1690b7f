"""Replay benchmark: every registered scheduler, one ``stratus replay --json`` process per run.

    make bench                                     # the whole matrix (tens of minutes)
    python benchmarks/bench_replay.py --quick      # smallest volume only (smoke use)
    python benchmarks/bench_replay.py --schedulers stratus --traces google --volumes 0.25,0.5
    python benchmarks/bench_replay.py --million    # peak RSS on a ~1M-task Google-like day

Traces: the real Google 2011 window (``../shared/data/google-2011``, the first 19 hours
after 600 s; skipped with a note when ``../shared/data`` is absent) and 24-hour Google- and
TwoSigma-like days (seed 1) at volumes 0.25, 0.5 and 1 of the generator's default scale.

A run is timed from the command's start to its exit, so the figure includes interpreter
start-up, imports, trace generation or loading and the estimator's warm-up; ``replay_s`` is
the engine's own share (the summary's ``wall_seconds``). Peak RSS is the child's own high
water mark, which it reports itself through a three-line wrapper around the CLI's
``main``: ``ru_maxrss`` seen by a parent (``wait4``, ``RUSAGE_CHILDREN``) would also carry
the parent's RSS at fork time on Linux. Runs go one at a time: two at once on two cores
would time each other. Per (trace, scheduler) the table ends with the scaling exponent of
wall time in tasks: the least-squares slope of log wall on log tasks over the volumes.

Writes one JSON document (runs, scaling, machine) to ``benchmarks/results/``; ``--json``
prints it instead of the table. This process imports no project code, so it stays small.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SHARED = ROOT / ".." / "shared" / "data"
GOOGLE_2011 = SHARED / "google-2011"
GOOGLE_2011_FORMAT = "google2011?window_start_s=600&window_hours=19"
TRACES = ("google2011", "google", "twosigma")
VOLUMES = (0.25, 0.5, 1.0)
#: scale 1 of the Google-like day is ~490k tasks, so ~1M (seed 1: 1,039,225 tasks)
MILLION_SCALE = 2.04

# Runs the CLI's main in the child and writes the child's own peak RSS (VmHWM: this
# process's high water mark since exec) to argv[1] as it exits.
WRAPPER = """\
import sys
from stratus.app.cli import main
def peak_kib():
    try:
        with open("/proc/self/status") as fh:
            return int(next(x for x in fh if x.startswith("VmHWM:")).split()[1])
    except (OSError, StopIteration, ValueError):
        import resource
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return rss // 1024 if sys.platform == "darwin" else rss
import os
try:
    code = main(sys.argv[2:])
finally:
    with open(sys.argv[1], "w") as fh:
        fh.write(str(peak_kib()))
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)  # as the stratus command ends (stratus.app.cli.entry): no interpreter teardown
"""


def scheduler_names() -> list[str]:
    """The registry's names, asked of the CLI (this process imports no project code)."""
    out = subprocess.run([sys.executable, "-c", "from stratus.app.cli import main; "
                          "main(['schedulers', '--json'])"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return [s["name"] for s in json.loads(out)]


def cases(traces, volumes, hours: float = 24.0, seed: int = 1) -> list[dict]:
    """The (trace, volume) pairs to run and the ``replay`` arguments of each. The real
    Google window has one volume, ``real``; it is left out (with a note on stderr) when
    ``../shared/data`` is absent."""
    out = []
    for name in traces:
        if name == "google2011":
            if not SHARED.is_dir():
                print(f"note: {SHARED} is absent: skipping the real Google 2011 window",
                      file=sys.stderr)
                continue
            out.append({"trace": name, "volume": "real",
                        "argv": ["--trace", str(GOOGLE_2011), "--format", GOOGLE_2011_FORMAT]})
            continue
        if name not in TRACES:
            raise SystemExit(f"bench_replay: unknown trace {name!r}; known: {', '.join(TRACES)}")
        for v in volumes:
            out.append({"trace": name, "volume": v,
                        "argv": ["--trace", f"synthetic:{name}?scale={v:g}", "--hours", f"{hours:g}",
                                 "--seed", str(seed)]})
    return out


def measure(argv: list[str]) -> dict:
    """Run ``stratus`` + ``argv`` (which should end in --json) in a child process: wall
    seconds from start to exit, CPU seconds, the child's peak RSS, its summary or error."""
    with tempfile.TemporaryDirectory(prefix="bench_replay.") as tmp:
        out_p, err_p, rss_p = (Path(tmp) / n for n in ("out", "err", "rss"))
        with open(out_p, "wb") as out, open(err_p, "wb") as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-c", WRAPPER, str(rss_p), *argv],
                                    cwd=ROOT, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
            _, status, ru = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        stdout, stderr = out_p.read_text(), err_p.read_text()
        rss_kib = int(rss_p.read_text()) if rss_p.exists() and rss_p.read_text() else None
    row = {"wall_s": round(wall, 3), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
           "peak_rss_mib": round(rss_kib / 1024, 1) if rss_kib else None,
           "exit_code": proc.returncode}
    if proc.returncode == 0:
        try:
            row["summary"] = json.loads(stdout)
        except ValueError:  # the CLI's promise: exactly one JSON document on stdout
            row["error"] = f"stdout is not one JSON document: {stdout[:80]!r}"
    else:
        lines = stderr.strip().splitlines()
        row["error"] = lines[-1] if lines else f"exit code {proc.returncode}"
    return row


def run_case(case: dict, scheduler: str) -> dict:
    """One replay of ``case`` under ``scheduler``, as a benchmark row."""
    r = measure(["replay", *case["argv"], "--scheduler", scheduler, "--json", "--no-progress"])
    s = r.pop("summary", None)
    row = {"trace": case["trace"], "volume": case["volume"], "scheduler": scheduler,
           "tasks": s["tasks"] if s else None, **r}
    if s:
        row.update(tasks_per_s=round(s["tasks"] / r["wall_s"], 1), replay_s=s["wall_seconds"],
                   total_cost_usd=s["total_cost_usd"], trace_name=s["trace"],
                   estimator=s["estimator"], warmup_jobs=s.get("estimator_warmup_jobs"))
    return row


def exponent(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log y on log x; None under two distinct x."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x and y and x > 0 and y > 0]
    if len({x for x, _ in pts}) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    return round(sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts), 3)


def scaling(rows: list[dict]) -> list[dict]:
    """Per (trace, scheduler): the exponent of wall time in tasks over its volumes."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        if r.get("tasks"):
            groups.setdefault((r["trace"], r["scheduler"]), []).append(r)
    return [{"trace": t, "scheduler": s, "volumes": [r["volume"] for r in g],
             "exponent": exponent([(r["tasks"], r["wall_s"]) for r in g])}
            for (t, s), g in groups.items()]


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() + ("-dirty" if dirty.strip() else "") if out.returncode == 0 else None


def machine() -> dict:
    """What the numbers were measured on, including how busy it was when they started."""
    cpu = platform.processor() or None
    mem = None
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((x.split(":", 1)[1].strip() for x in fh if x.startswith("model name")), cpu)
        with open("/proc/meminfo") as fh:
            mem = round(int(next(x for x in fh if x.startswith("MemTotal:")).split()[1]) / 2**20, 1)
    except (OSError, StopIteration, ValueError):
        pass
    return {"hostname": platform.node(), "platform": platform.platform(), "cpu": cpu,
            "cpu_count": os.cpu_count(), "memory_gib": mem, "python": platform.python_version(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()]
            if hasattr(os, "getloadavg") else None, "git_commit": _git_commit()}


def document(rows: list[dict], options: dict, host: dict | None = None) -> dict:
    return {"benchmark": "replay", "created": dt.datetime.now().astimezone().isoformat(
            timespec="seconds"), "options": options, "machine": host or machine(),
            "runs": rows, "scaling": scaling(rows)}


def write(doc: dict, directory: Path = RESULTS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    path = directory / f"replay-{stamp}{'-million' if doc['options'].get('million') else ''}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def _f(v, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def table(doc: dict) -> str:
    head = ("trace", "volume", "scheduler", "tasks", "wall s", "tasks/s", "peak RSS MiB",
            "cpu s", "replay s")
    rows = [(r["trace"], str(r["volume"]), r["scheduler"], _f(r["tasks"], ","),
             _f(r["wall_s"], ".2f"), _f(r.get("tasks_per_s"), ",.0f"),
             _f(r["peak_rss_mib"], ",.0f"), _f(r["cpu_s"], ".2f"),
             _f(r.get("replay_s"), ".2f") if "error" not in r else "error: " + r["error"])
            for r in doc["runs"]]
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(line, widths))).rstrip() for line in (head, *rows)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    fits = [s for s in doc["scaling"] if len(s["volumes"]) > 1]
    if fits:
        lines += ["", "scaling exponent of wall time in tasks (log-log least squares)"]
        lines += [f"  {s['trace']:<10} {s['scheduler']:<20} {_f(s['exponent'], '.2f'):>6}"
                  f"  over volumes {', '.join(str(v) for v in s['volumes'])}" for s in fits]
    return "\n".join(lines)


def _volumes(text: str) -> list[float]:
    try:
        vols = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"bench_replay: --volumes takes numbers like 0.25,0.5,1, got {text!r}") from None
    if not vols or any(not v > 0 for v in vols):
        raise SystemExit(f"bench_replay: --volumes must be positive, got {text!r}")
    return vols


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schedulers", help="comma-separated (default: every registered one)")
    ap.add_argument("--traces", default=",".join(TRACES), help=f"subset of {','.join(TRACES)}")
    ap.add_argument("--volumes", default=",".join(f"{v:g}" for v in VOLUMES),
                    help="synthetic scales (default 0.25,0.5,1)")
    ap.add_argument("--hours", type=float, default=24.0, help="synthetic window (24)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true",
                    help="only the smallest volume (the real window has one and stays: "
                         "--traces google,twosigma leaves it out)")
    ap.add_argument("--million", action="store_true",
                    help=f"instead: each scheduler on a Google-like day of ~1M tasks "
                         f"(scale {MILLION_SCALE:g}), for peak RSS")
    ap.add_argument("--results-dir", type=Path, default=RESULTS, help="where the JSON goes")
    ap.add_argument("--json", action="store_true", help="print the JSON document, not a table")
    args = ap.parse_args(argv)

    names = [s.strip() for s in args.schedulers.split(",")] if args.schedulers else scheduler_names()
    vols = _volumes(args.volumes)
    if args.million:
        todo = cases(["google"], [MILLION_SCALE], args.hours, args.seed)
    else:
        todo = cases([t.strip() for t in args.traces.split(",") if t.strip()],
                     [min(vols)] if args.quick else vols, args.hours, args.seed)
    options = {"schedulers": names, "traces": sorted({c["trace"] for c in todo}, key=TRACES.index),
               "volumes": sorted({c["volume"] for c in todo}, key=str), "hours": args.hours,
               "seed": args.seed, "quick": args.quick, "million": args.million}
    host = machine()
    rows = []
    for case in todo:
        for name in names:
            rows.append(run_case(case, name))
            r = rows[-1]
            print(f"{r['trace']} {r['volume']} {name}: " + (
                f"{r['tasks']:,} tasks, {r['wall_s']:.1f} s, {_f(r['peak_rss_mib'], ',.0f')} MiB"
                if "error" not in r else r["error"]), file=sys.stderr, flush=True)
    doc = document(rows, options, host)
    path = write(doc, args.results_dir)
    print(f"wrote {path}", file=sys.stderr)
    print(json.dumps(doc) if args.json else table(doc))
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
