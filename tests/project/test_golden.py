"""Golden results: one small day of each synthetic workload through every registered
scheduler, as the CLI runs it (spot, the scheduler's own estimator, a 24-hour warm-up).
Speed work must not change what a replay decides: cost to the cent, instances acquired and
migrations stay exactly these, under the compiled core and under its pure-Python reference
(issue 39: the pure kernel put in the engine's place). Regenerate only for a deliberate change of behaviour, and say
so in the commit."""

from __future__ import annotations

import json

import pytest

from stratus.app.cli import main
from stratus.sim import engine as engine_mod
from stratus.sim.kernel import COMPILED, PyKernel

# the integer bound has its own tests (conftest.no_integer_bound)
pytestmark = [pytest.mark.usefixtures("no_integer_bound"), pytest.mark.slow]

GOLDEN = {
    "synthetic:google?scale=0.05": {
        "task-per-instance": (632.03, 21909, 0),
        "first-fit": (594.24, 15298, 0),
        "stratus": (400.36, 1569, 2408),
        "stratus-noclear": (469.43, 1267, 0),
        "stratus-oracle": (344.12, 1947, 871),
        "hotspot": (632.05, 21915, 188),
        "scloud": (425.99, 2519, 0),
        "scloud+pack": (539.52, 1076, 0),
        "scloud+pack+scale": (399.4, 1326, 0),
        "scloud+pack+scale+clear": (350.37, 1897, 1384),
        "fleet": (588.78, 12171, 0),
        "fleet-mem": (587.76, 12219, 0),
        "fleet-diversified": (453.43, 1265, 0),
        "karpenter": (429.39, 733, 4689),
        "stratus-bestfit": (585.49, 15687, 1623),
    },
    "synthetic:twosigma?scale=0.05": {
        "task-per-instance": (645.87, 17251, 0),
        "first-fit": (617.68, 7422, 0),
        "stratus": (559.75, 895, 2741),
        "stratus-noclear": (688.0, 435, 0),
        "stratus-oracle": (488.69, 1207, 770),
        "hotspot": (634.67, 17154, 221),
        "scloud": (661.88, 2222, 0),
        "scloud+pack": (798.98, 321, 0),
        "scloud+pack+scale": (586.65, 664, 0),
        "scloud+pack+scale+clear": (518.27, 1151, 1165),
        "fleet": (617.53, 7451, 0),
        "fleet-mem": (623.79, 7289, 0),
        "fleet-diversified": (622.14, 509, 0),
        "karpenter": (619.15, 379, 2848),
        "stratus-bestfit": (599.57, 9498, 1619),
    },
}


# One case per (trace, scheduler), so that pytest-xdist spreads the 30 replays over its
# workers; --jobs 1 keeps each replay in the test's process (no compare worker processes
# competing with the xdist workers, and conftest.no_integer_bound applies: spawned workers
# would compute the bound). A compare's numbers do not depend on --jobs or on the other
# schedulers of the command (tests/app/test_runs.py checks parallel against serial).
CASES = [(trace, name) for trace in sorted(GOLDEN) for name in GOLDEN[trace]]
# the core a replay uses, and its pure reference when that is another (a machine without
# the compiled core runs the reference already)
CORES = ["default"] + (["pure"] if COMPILED is not None else [])


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("trace, name", CASES)
def test_every_scheduler_decides_as_before(trace, name, core, capsys, monkeypatch):
    if core == "pure":
        monkeypatch.setattr(engine_mod, "Kernel", PyKernel)
    code = main(["compare", "--trace", trace, "--hours", "24", "--seed", "1",
                 "--warmup-hours", "24", "--schedulers", name, "--jobs", "1", "--json"])
    assert code == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    got = {r["scheduler"]: (round(r["total_cost_usd"], 2), r["instances_acquired"],
                            r["migrations"]) for r in runs}
    assert got == {name: GOLDEN[trace][name]}
