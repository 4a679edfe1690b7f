"""How often a replay's GPU placements have no assignment to devices (docs/findings/eva.md).

    python benchmarks/gpu_devices.py --window week --schedulers stratus eva fleet karpenter

The engine pools an instance's GPUs in thousandths: exact on a 1-GPU type, but on a 4- or
8-GPU type a set of shares can fit the pool and fit no assignment to devices. This replays
the Alibaba GPU trace 2023 with ``gpu=share`` on ``aws-2025-p3-c7i-r7i``, as the cells of
examples/eva-alibaba-share.toml (same options, so the same bill), with an add-on that, each
time a task takes its request on an instance (``AddOn.held``: a placement, a wait for the
instance, or a migration's destination), checks the set of tasks on the instance just after
it with ``stratus.sim.devices.device_assignment``. The packers are not changed; the engine core
neither. Prints one JSON document: per scheduler, the placement states, those on multi-GPU
types, those holding a share there, those with no assignment (and undecided: the exact
search's budget ran out), and the instances that ever had one."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

from stratus.app.registry import get_spec
from stratus.app.runs import estimator_name, fitted_estimator, replay_config
from stratus.app.session import Session
from stratus.app.spec import ReplaySpec
from stratus.replays import engine
from stratus.sim.devices import PER_GPU, device_assignment
from stratus.sim.hooks import AddOn

DATA = "../shared/data/alibaba-gpu-2023"
#: the two windows of examples/eva-alibaba-share.toml: (start, hours); None = the loader's
WINDOWS = {"busy": (None, None), "week": (11174572.0, 168.0)}


class DeviceCheck(AddOn):
    """Counts placement states by what their GPU requests allow (see the module)."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.bad_instances: set[int] = set()
        self.memo: dict[tuple, bool | None] = {}

    def held(self, inst, task, t: float) -> None:
        n = inst.itype.gpus
        if not n:
            return
        c = self.counts
        c["states_on_gpu_types"] += 1
        reqs = tuple(sorted(x.req[2] for x in inst.tasks.values()))
        if n == 1:
            return  # one device: the pool is the device, every state that fits it is
        c["states_multi_gpu"] += 1
        if not any(0 < r < PER_GPU for r in reqs):
            return  # whole GPUs only: an assignment exists whenever the pool fits
        c["states_multi_gpu_with_share"] += 1
        key = (n, reqs)
        ok = self.memo.get(key, "?")
        if ok == "?":
            ok = self.memo[key] = device_assignment(reqs, n)
        if ok is None:
            c["undecided"] += 1
        elif not ok:
            c["no_device_assignment"] += 1
            self.bad_instances.add(inst.iid)


def run(window: str, scheduler: str, market: str, catalog: str) -> dict:
    start, hours = WINDOWS[window]
    opts = {"trace": DATA, "format": "alibaba-gpu2023?gpu=share", "scheduler": scheduler,
            "market": market, "catalog": catalog, "drop_oversized": True,
            "spot_start": -9964972.0, "seed": 1}
    if start is not None:
        opts.update(start=start, hours=hours)
    spec = ReplaySpec.build(opts)
    sess = Session(spec)  # the window, its fit and its warm-up, as the CLI loads them
    fitted, history = sess.fitted(spec.catalog, spec.drop_oversized), sess.history
    sched = get_spec(spec.scheduler)
    cfg = replay_config(spec)
    cfg.estimator = fitted_estimator(estimator_name(spec, sched), spec.seed, history)
    check = DeviceCheck()
    t0 = time.perf_counter()
    res = engine(fitted, sched.factory(), cfg, (check,)).run()
    c = check.counts
    states = c["states_multi_gpu_with_share"]
    return {"window": window, "scheduler": scheduler, "market": market,
            "total_cost_usd": round(res.summary["total_cost_usd"], 2),
            **{k: c[k] for k in ("states_on_gpu_types", "states_multi_gpu",
                                 "states_multi_gpu_with_share", "no_device_assignment",
                                 "undecided")},
            "share_of_gpu_states": (round(c["no_device_assignment"] / c["states_on_gpu_types"], 5)
                                    if c["states_on_gpu_types"] else None),
            "share_of_multi_gpu_share_states": (round(c["no_device_assignment"] / states, 5)
                                                if states else None),
            "instances_with_one": len(check.bad_instances),
            "instances": res.summary["instances_acquired"],
            "wall_s": round(time.perf_counter() - t0, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window", choices=sorted(WINDOWS), nargs="+", default=["week"])
    ap.add_argument("--schedulers", nargs="+", default=["stratus", "eva", "fleet", "karpenter"])
    ap.add_argument("--market", default="on-demand")
    ap.add_argument("--catalog", default="aws-2025-p3-c7i-r7i")
    args = ap.parse_args(argv)
    rows = []
    for w in args.window:
        for s in args.schedulers:
            rows.append(run(w, s, args.market, args.catalog))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
