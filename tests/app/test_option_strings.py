"""Scheduler options and part parameters as properties (issue 35): random
``NAME?KEY=VALUE&KEY.NAME=VALUE`` strings for every registered scheduler, drawn from what
each factory and part declares. A string with a bad item is a ConfigError naming that item,
never another exception; a good one names one scheduler (its canonical name reads back as
itself, its parts named by their parameters) that replays a small random workload under the
engine's invariants. And the defects of issue 35, each as the CLI meets it."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.app.cli import main
from stratus.app.registry import get_spec, make_scheduler, scheduler_names
from stratus.base.errors import ConfigError
from stratus.policy.params import part_params
from stratus.sim.engine import Engine, ReplayConfig
from tests.helpers.invariants import check_invariants
from tests.helpers.scheduler_options import option_strings
from tests.helpers.strategies import configs, workloads

# the integer bound has its own tests (conftest.no_integer_bound)
pytestmark = pytest.mark.usefixtures("no_integer_bound")

TRACE = "synthetic:google?scale=0.01"
EXAMPLES = int(os.environ.get("STRATUS_OPTION_EXAMPLES", "8"))  # per registered name
#: why a replay may end with tasks unfinished, with any scheduler: every spot price above
#: the bid to the end of the prices; nothing else may stop it
STARVED = "capacity can never be had"


def _check_good(text: str, trace, conf) -> None:
    spec = get_spec(text)
    sched = spec.factory()
    assert sched.name == spec.name
    again = get_spec(spec.name)  # the canonical name reads back as itself
    assert again.name == spec.name and again.factory().get_params() == sched.get_params()
    # a part's name derives from its parameters: it differs from the same part's in the
    # scheduler with the same options and no parameters set iff a parameter does
    base, _, query = text.partition("?")
    options = [i for i in query.split("&") if "." not in i.partition("=")[0]]
    plain = make_scheduler(f"{base}?{'&'.join(options)}" if options else base).parts()
    for key, part in sched.parts().items():
        other = plain[key]
        assert (part.name == other.name) == (part_params(part) == part_params(other)), \
            (text, key, part.name, other.name)
    res = Engine(trace, sched, ReplayConfig(record=True, **conf)).run()
    why = res.summary["ended_early"]
    assert why is None or why.startswith(STARVED), (text, why)
    check_invariants(trace, res, partial=why is not None)


# 15 registered names x 8 strings, half of them bad: about 10 s on one core (the examples
# are new at every run, as in tests/core/test_properties.py: the runs add up)
@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), trace=workloads(max_jobs=4, max_tasks=3), conf=configs)
def test_a_random_option_string_is_refused_by_name_or_replays_under_the_invariants(
        name, data, trace, conf):
    text, bad = data.draw(option_strings([name]), label="scheduler")
    if bad is None:
        _check_good(text, trace, conf)
        return
    with pytest.raises(ConfigError) as exc:
        get_spec(text)
    msg = str(exc.value)
    assert bad in msg and "\n" not in msg, (text, bad, msg)


# --- the defects of issue 35, as the CLI meets them ------------------------------------------
def _replay(capsys, name: str, *more: str) -> tuple[int, str, str]:
    code = main(["replay", "--trace", TRACE, "--hours", "1", "--scheduler", name, *more])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.mark.parametrize("name, needle", [
    # were IndexErrors (exit 70) once the replay ran
    ("fleet?packer.dim=2", "fleet: packer.dim: takes 0 (cpu) or 1 (memory), got '2'"),
    ("fleet?scaler.copack=-1", "fleet: scaler.copack: takes 0 (cpu), 1 (memory) or none, "
                               "got '-1'"),
    # copack was None by default, so any number became a float index
    ("stratus?scaleout=best-fit&scaler.copack=0.5", "stratus: scaler.copack: takes 0 (cpu), "
                                                    "1 (memory) or none, got '0.5'"),
    ("stratus-bestfit?scaler.copack=2", "scaler.copack: takes 0 (cpu), 1 (memory) or none"),
    # parts that checked nothing
    ("hotspot?scaler.bid_factor=0", "hotspot: scaler.bid_factor: takes a multiple of the "
                                    "on-demand price in [1, 10] or none, got '0'"),
    ("hotspot?migrator.unit=disk", "hotspot: migrator.unit: takes load or capacity, got 'disk'"),
    ("karpenter?scaler.keep=2", "karpenter: scaler.keep: takes true or false, got '2'"),
    ("stratus?packer.unit_s=0", "stratus: packer.unit_s: takes seconds in [1e-06, 1e+09], got '0'"),
    ("task-per-instance?scaler.bid_factor=x", "scaler.bid_factor: takes a number, got 'x'"),
    ("fleet?packer.dim=none", "fleet: packer.dim: takes 0 (cpu) or 1 (memory), got 'none'"),
    ("stratus?clearing.ticks=none", "stratus: clearing.ticks: takes a whole number of ticks "
                                    ">= 0, got 'none'"),
])
def test_a_bad_part_parameter_is_one_line_naming_it_before_the_replay(capsys, name, needle):
    code, out, err = _replay(capsys, name)
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and needle in err, err


@pytest.mark.slow
@pytest.mark.parametrize("name, canonical", [
    # SCloud with clearing and no packer: clearing re-packs by dot product with an index of
    # its own (it was built with packer=None: AttributeError, exit 70)
    ("scloud?clear=true", "scloud?clear=true"),
    # an int parameter that defaults to None is an int (it became a float index: exit 70)
    ("stratus?scaleout=best-fit&scaler.copack=1", "stratus-bestfit?scaler.copack=1"),
    ("fleet?scaler.copack=none", "fleet?scaler.copack=none"),
    ("hotspot?scaler.bid_factor=none&migrator.bid_factor=1",
     "hotspot?migrator.bid_factor=1.0&scaler.bid_factor=none"),
])
def test_documented_syntax_runs_every_task_under_its_canonical_name(capsys, name, canonical):
    code, out, err = _replay(capsys, name, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["scheduler"] == canonical
    assert doc["tasks_completed"] == doc["tasks"] > 0 and doc["ended_early"] is None


@pytest.mark.slow
def test_scloud_with_clearing_and_no_packer_clears_under_the_invariants():
    from stratus.app.api import load_trace

    trace = load_trace("synthetic:google?scale=0.02", hours=3)
    conf = {"market": "on-demand"}
    res = Engine(trace, make_scheduler("scloud?clear=true"), ReplayConfig(record=True,
                                                                           **conf)).run()
    check_invariants(trace, res)
    assert res.summary["instances_cleared"] > 0 and res.summary["tasks_migrated"] > 0
    plain = Engine(trace, make_scheduler("scloud"), ReplayConfig(**conf)).run()
    assert res.summary["total_cost_usd"] < plain.summary["total_cost_usd"]


def test_a_part_is_named_by_its_parameters():
    assert make_scheduler("fleet").packer.name == "binpack-cpu"
    assert make_scheduler("fleet?packer.dim=1").packer.name == "binpack-memory"
    fleet_mem = make_scheduler("fleet-mem")
    assert (fleet_mem.packer.name, fleet_mem.scaler.name) == \
        ("binpack-memory", "per-task-lowest-price+copack-memory")
    assert make_scheduler("fleet?scaler.copack=none").scaler.name == "per-task-lowest-price"
    assert make_scheduler("stratus-bestfit?scaler.copack=1").scaler.name == \
        "per-task-best-fit+copack-memory"
    s = make_scheduler("stratus")
    assert s.migrator.name == "instance-clearing"
    s.set_params(**{"clearing.threshold": "0.4", "clearing.ticks": 5})
    assert s.migrator.name == "instance-clearing(threshold=0.4, ticks=5)"
    chain = make_scheduler("scloud+pack+scale+clear?clearing.ticks=1").migrator
    assert chain.name == "hotspot-migration(unit=capacity)+instance-clearing(ticks=1)"


def test_a_part_checks_its_parameters_when_it_is_built():
    from stratus.packers.binpack import Binpack
    from stratus.scalers.hotspot_migration import PriceHopping
    from stratus.scalers.per_task import LowestPrice, PerTaskScaler
    from stratus.scalers.task_per_instance import CheapestPerTask

    for build, needle in [(lambda: Binpack(2), "binpack: dim: takes 0 (cpu) or 1 (memory)"),
                          (lambda: PerTaskScaler(LowestPrice(), copack=1.5),
                           "per-task-lowest-price: copack: takes 0 (cpu), 1 (memory) or none"),
                          (lambda: PriceHopping(unit="x"), "unit: takes load or capacity"),
                          (lambda: CheapestPerTask(bid_factor=0.5), "in [1, 10] or none")]:
        with pytest.raises(ConfigError) as exc:
            build()
        assert needle in str(exc.value)
    # typed as declared: a whole float is an int, an int a float
    assert PerTaskScaler(LowestPrice(), copack=1.0).copack == 1
    assert type(CheapestPerTask(bid_factor=2).bid_factor) is float


def test_the_reference_lists_every_built_in_parameter_as_it_is_declared():
    import re

    from stratus.policy.params import declared
    from tests.helpers.paths import ROOT

    doc = (ROOT / "docs" / "reference" / "schedulers.md").read_text()
    rows = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`(\w+\.\w+)`", cells[0])
        if m:
            rows[m.group(1)] = cells[2]
    takes: dict[str, set] = {}
    for name in [*scheduler_names(), "scloud?clear=true"]:
        for key, part in make_scheduler(name).parts().items():
            for n, p in declared(part).items():
                takes.setdefault(f"{key}.{n}", set()).add(p.takes())
    assert all(len(v) == 1 for v in takes.values()), takes  # one KEY.NAME, one meaning
    assert rows == {k: next(iter(v)) for k, v in takes.items()}
