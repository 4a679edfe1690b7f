"""``stratus live``: a scheduler against a real cluster and cloud, observing (``--shadow``)
or acting (``--apply``); docs/guides/live.md is the runbook."""

from __future__ import annotations

import json
import sys

from stratus.app.cli.common import add_output_flags, add_spec, spec_from


def add_parsers(sub) -> None:
    from stratus.app.spec.live import LiveSpec

    p = sub.add_parser("live", help="run a scheduler against a Kubernetes cluster and EC2 "
                                    "(--shadow: observe only; --apply: act)")
    add_spec(p, LiveSpec)
    add_output_flags(p)


def cmd_live(args) -> int:
    from stratus.app.live import run_live
    from stratus.app.spec.live import LiveSpec

    spec = spec_from(args, LiveSpec)
    doc = run_live(spec)
    if args.json:
        print(json.dumps(doc, default=str))
        return 0
    for e in doc["decisions"]:
        parts = [f"t={e['t']:g}"]
        for k in ("acquire", "place", "migrate", "release", "idle_released"):
            if e.get(k):
                parts.append(f"{k} {len(e[k])}")
        print("  ".join(parts))
    if "estimate" in doc:
        est = doc["estimate"]
        print(f"estimated saving over {est['ticks']} tick(s): "
              f"{est['estimated_saving_usd']:.4f} $ (actual {est['actual_usd']:.4f} $, "
              f"with the scheduler {est['policy_usd']:.4f} $)")
    for line in doc["stats"]["errors"]:
        print(f"stratus live: {line}", file=sys.stderr)
    return 0


COMMANDS = {"live": cmd_live}
