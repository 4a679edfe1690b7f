"""What the progress bar costs the event loop (issue 20, item 7): one replay, bar off vs on.

    python benchmarks/bench_progress.py                  # google-like, scale 0.2, 6 h, 5 pairs
    python benchmarks/bench_progress.py --pairs 9 --json
    python benchmarks/bench_progress.py --hook noop      # control: a hook that draws nothing

The trace is generated once (``stratus.traces.synthetic.generate("google", scale, hours, seed)``,
fitted to the default catalog as the CLI does) and replayed under one scheduler
(``stratus`` by default) in this process, alternately without a progress hook and with
``stratus.app.progress.ProgressBar`` drawing on a fake terminal: a stream whose ``isatty()`` is
true and whose writes go to ``/dev/null``, so the bar renders everything it would on a real
terminal and nothing waits for a terminal emulator. Pairs alternate which arm goes first
(off-on, on-off, ...) so drift on a shared machine falls on both. A warm-up replay of each
arm comes first and is not counted. Only ``Engine.run()`` is timed (the event loop); the
engine is built outside the timer.

Three figures, each the median over pairs with its spread: (on - off) / off in wall time;
the same in CPU time (``time.process_time``: this process, every thread, so a drawing thread
would count; far less disturbed than wall time by other work on a shared machine); and the
time spent inside the engine's progress hook (each call, and the ``close()`` the engine
makes as the replay ends) over the "off" run's time, in wall and in CPU time: the bar's
direct cost to the loop. The last run's hook calls and writes
follow. ``--hook noop`` replaces the bar by a hook that does nothing: its figures are the
noise floor of the machine (an A/A comparison), against which the bar's are read.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


class FakeTTY:
    """A terminal to the bar (``isatty()`` is true) that discards what it is sent."""

    def __init__(self) -> None:
        self._null = open(os.devnull, "w")  # noqa: SIM115 (closed in close())
        self.writes = 0
        self.chars = 0

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.writes += 1
        self.chars += len(s)
        return self._null.write(s)

    def flush(self) -> None:
        self._null.flush()

    def fileno(self) -> int:
        return self._null.fileno()

    def close(self) -> None:
        self._null.close()

    @property
    def encoding(self) -> str:
        return "utf-8"


class Counting:
    """The hook the engine calls, counted, passing through to the bar."""

    def __init__(self, bar) -> None:
        self.bar, self.calls, self.inside_s, self.inside_cpu_s = bar, 0, 0.0, 0.0

    def __call__(self, sim_t: float, done: int, total: int) -> None:
        self.calls += 1
        c0, t0 = time.process_time(), time.perf_counter()
        self.bar(sim_t, done, total)
        self.inside_s += time.perf_counter() - t0
        self.inside_cpu_s += time.process_time() - c0

    def close(self) -> None:  # the engine calls it as the replay ends: counted as inside
        close = getattr(self.bar, "close", None)
        if close is not None:
            c0, t0 = time.process_time(), time.perf_counter()
            close()
            self.inside_s += time.perf_counter() - t0
            self.inside_cpu_s += time.process_time() - c0


def make_trace(scale: float, hours: float, seed: int):
    from stratus.pricing.catalog_files import get_catalog
    from stratus.traces import synthetic
    from stratus.traces.schema import fit_to_catalog

    return fit_to_catalog(synthetic.generate("google", scale=scale, hours=hours, seed=seed),
                          get_catalog("m4"), False)


class Noop:
    """The control: a progress hook that draws nothing."""

    def __init__(self, label: str, stream=None) -> None:
        pass

    def __call__(self, sim_t: float, done: int, total: int) -> None:
        pass


def replay_s(trace, scheduler: str, bar: bool, hook_kind: str = "bar"
             ) -> tuple[float, float, dict]:
    """Wall and CPU seconds of ``Engine.run()`` (CPU: this process, every thread), and what
    the bar did."""
    from stratus.app.progress import ProgressBar
    from stratus.app.registry import make_scheduler
    from stratus.sim.engine import Engine, ReplayConfig

    cfg = ReplayConfig(seed=1)
    tty = hook = None
    if bar:
        tty = FakeTTY()
        make = ProgressBar if hook_kind == "bar" else Noop
        hook = cfg.progress = Counting(make(scheduler, stream=tty))
    eng = Engine(trace, make_scheduler(scheduler), cfg)
    c0, t0 = time.process_time(), time.perf_counter()
    eng.run()
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    info = {}
    if bar:
        tty.close()
        info = {"hook_calls": hook.calls, "inside_hook_s": hook.inside_s,
                "inside_hook_cpu_s": hook.inside_cpu_s,
                "writes": tty.writes, "chars": tty.chars}
    return dt, dc, info


def measure(args) -> dict:
    trace = make_trace(args.scale, args.hours, args.seed)
    replay_s(trace, args.scheduler, False)  # warm-up: imports, caches
    replay_s(trace, args.scheduler, True, args.hook)
    wall = {False: [], True: []}
    cpu = {False: [], True: []}
    wall_r, cpu_r, inside_r, inside_cpu_r, infos = [], [], [], [], []
    for k in range(args.pairs):
        order = (False, True) if k % 2 == 0 else (True, False)
        for bar in order:
            w, c, i = replay_s(trace, args.scheduler, bar, args.hook)
            wall[bar].append(w)
            cpu[bar].append(c)
            if bar:
                infos.append(i)
        wall_r.append(wall[True][-1] / wall[False][-1] - 1.0)
        cpu_r.append(cpu[True][-1] / cpu[False][-1] - 1.0)
        inside_r.append(infos[-1]["inside_hook_s"] / wall[False][-1])
        inside_cpu_r.append(infos[-1]["inside_hook_cpu_s"] / cpu[False][-1])
        print(f"pair {k + 1}/{args.pairs}: wall off {wall[False][-1]:.3f} s on "
              f"{wall[True][-1]:.3f} s ({wall_r[-1]:+.2%}); cpu off {cpu[False][-1]:.3f} s on "
              f"{cpu[True][-1]:.3f} s ({cpu_r[-1]:+.2%}); inside the hook "
              f"{infos[-1]['inside_hook_s'] * 1e3:.1f} ms ({inside_r[-1]:.3%}), CPU "
              f"{infos[-1]['inside_hook_cpu_s'] * 1e3:.1f} ms ({inside_cpu_r[-1]:.3%})",
              file=sys.stderr, flush=True)

    def spread(r):
        return {"median": statistics.median(r), "min": min(r), "max": max(r)}

    return {
        "trace": {"generator": "google", "scale": args.scale, "hours": args.hours,
                  "seed": args.seed, "tasks": trace.n_tasks},
        "scheduler": args.scheduler, "pairs": args.pairs, "hook": args.hook,
        "wall_off_s": wall[False], "wall_on_s": wall[True],
        "cpu_off_s": cpu[False], "cpu_on_s": cpu[True],
        "wall_off_median_s": statistics.median(wall[False]),
        "wall_on_median_s": statistics.median(wall[True]),
        "cpu_off_median_s": statistics.median(cpu[False]),
        "cpu_on_median_s": statistics.median(cpu[True]),
        "overhead_wall": spread(wall_r), "overhead_cpu": spread(cpu_r),
        "inside_hook_share": spread(inside_r), "inside_hook_cpu_share": spread(inside_cpu_r),
        "bar": infos[-1],
        "python": sys.version.split()[0],
    }


def table(doc: dict) -> str:
    b = doc["bar"]

    def s(r):
        return f"{r['median']:+.2%} [{r['min']:+.2%} .. {r['max']:+.2%}]"

    return "\n".join([
        f"trace google scale {doc['trace']['scale']} {doc['trace']['hours']} h seed "
        f"{doc['trace']['seed']}: {doc['trace']['tasks']:,} tasks; scheduler {doc['scheduler']}; "
        f"{doc['pairs']} pairs; hook {doc['hook']}",
        f"Engine.run() wall, median: off {doc['wall_off_median_s']:.3f} s, "
        f"on {doc['wall_on_median_s']:.3f} s; pair ratio {s(doc['overhead_wall'])}",
        f"Engine.run() CPU, median: off {doc['cpu_off_median_s']:.3f} s, "
        f"on {doc['cpu_on_median_s']:.3f} s; pair ratio {s(doc['overhead_cpu'])}",
        f"time inside the hook / wall off: {s(doc['inside_hook_share'])}",
        f"CPU inside the hook / CPU off: {s(doc['inside_hook_cpu_share'])}",
        f"bar (last run): {b['hook_calls']:,} hook calls, {b['inside_hook_s'] * 1e3:.1f} ms "
        f"inside ({b['inside_hook_cpu_s'] * 1e3:.1f} ms CPU), {b['writes']:,} writes, "
        f"{b['chars']:,} characters",
    ])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.2)
    ap.add_argument("--hours", type=float, default=6.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scheduler", default="stratus")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--hook", choices=("bar", "noop"), default="bar",
                    help="the 'on' arm's hook: stratus.app.progress.ProgressBar, or the control")
    ap.add_argument("--json", action="store_true", help="print the JSON document")
    args = ap.parse_args(argv)
    doc = measure(args)
    print(json.dumps(doc, indent=1) if args.json else table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
