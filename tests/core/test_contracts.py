"""The plugin contracts (issue 21, item 2): cordons belong to the scheduler and every
packer honours them, from the moment a part cordons an instance; instances and tasks are
read-only while a policy decides; parts' hooks default to no-ops."""

from __future__ import annotations

import threading

import pytest

from stratus.app.registry import make_scheduler, scheduler_names
from stratus.base.errors import DecisionError
from stratus.policy.compose import ComposedScheduler, Part
from stratus.replays import replay
from stratus.sim.engine import ReplayConfig
from stratus.sim.model import Instance, Task
from stratus.testing import Sealed, sealed
from tests.helpers.invariants import comparable
from tests.helpers.trace import make_trace


def _trace(n: int = 60):
    # short tasks arriving over two hours: instances come and go, packers place on live ones
    return make_trace([(j, 0, 60.0 * j, 900.0 + 30 * (j % 7), 1.0, 2.0) for j in range(n)])


class CordonAll(Part):
    """Migrator: cordons every ready instance at its third tick, and remembers them."""

    name = "cordon-all"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.ticks, self.cordoned, self.at = 0, set(), None

    def migrate(self, view, plan) -> None:
        self.ticks += 1
        if self.ticks == 3:
            self.at = view.now
            for inst in view.instances:
                plan.cordon(inst)
                self.cordoned.add(inst.iid)
        assert self.cordoned & {i.iid for i in view.instances} <= plan.cordoned


class Recorder:
    """Wraps a packer and records where it placed."""

    def __init__(self, packer) -> None:
        self.packer, self.name, self.placed = packer, packer.name, []

    def reset(self) -> None:
        self.packer.reset()
        self.placed.clear()

    def pack(self, view, plan, tasks):
        before = len(plan.decisions.placements)
        left = self.packer.pack(view, plan, tasks)
        self.placed += [(view.now, p.instance.iid) for p in plan.decisions.placements[before:]]
        return left


@pytest.mark.parametrize("packer", ["binning", "dot-product", "first-fit", "binpack"])
def test_no_packer_places_on_a_cordoned_instance(packer):
    from stratus.packers.binning import RuntimeBinPacker
    from stratus.packers.binpack import Binpack
    from stratus.packers.dot_product import DotProductPacker
    from stratus.packers.first_fit import FirstFit
    from stratus.scalers.task_per_instance import CheapestPerTask

    inner = {"binning": RuntimeBinPacker, "dot-product": DotProductPacker,
             "first-fit": FirstFit, "binpack": Binpack}[packer]()
    rec, mig = Recorder(inner), CordonAll()
    sched = ComposedScheduler("t", scaler=CheapestPerTask(), packer=rec, migrator=mig)
    res = replay(_trace(), sched, ReplayConfig(spinup_s=(0.0, 0.0)))
    assert res.summary["tasks_completed"] == 60
    assert mig.cordoned, "nothing was cordoned: the test proves nothing"
    assert rec.placed, "the packer never placed: the test proves nothing"
    after = [(t, iid) for t, iid in rec.placed if t > mig.at]
    assert after, "nothing was placed after the cordon: the test proves nothing"
    assert not [iid for _, iid in after if iid in mig.cordoned]
    assert sched.cordoned <= mig.cordoned  # gone instances were dropped


def test_a_policy_that_sets_an_instance_attribute_is_stopped():
    from stratus.scalers.task_per_instance import CheapestPerTask

    class Keeper(Part):
        name = "keeper"

        def migrate(self, view, plan) -> None:
            for inst in view.instances:
                inst.keep = True  # behind the Decisions path

    sched = ComposedScheduler("t", scaler=CheapestPerTask(), migrator=Keeper())
    with pytest.raises(DecisionError, match=r"set Instance\.keep"):
        replay(_trace(10), Sealed(sched), ReplayConfig(spinup_s=(0.0, 0.0)))
    assert "__setattr__" not in Instance.__dict__ and "__setattr__" not in Task.__dict__


@pytest.mark.parametrize("name", scheduler_names())
def test_every_built_in_scheduler_keeps_to_decisions_and_sealing_changes_nothing(name):
    """The engine does not seal (a check, not its cost: issue 37 item 4); a sealed replay
    of each built-in scheduler runs through and bills the same to the bit."""
    trace = _trace(12)
    conf = ReplayConfig(spinup_s=(0.0, 0.0), record=True)
    plain = replay(trace, make_scheduler(name), conf)
    assert comparable(replay(trace, Sealed(make_scheduler(name)), conf)) == comparable(plain)


def test_tasks_are_sealed_too_and_only_in_the_deciding_thread():
    t = Task(0, 0, 0, 0.0, 10.0, (1, 1))
    other: list = []
    with sealed():
        with pytest.raises(DecisionError, match=r"set Task\.req"):
            t.req = (2, 2)
        th = threading.Thread(target=lambda: other.append(setattr(t, "runtime", 20.0)))
        th.start()
        th.join()
    assert t.runtime == 20.0 and t.req == (1, 1)  # another thread's replay wrote freely
    t.req = (3, 3)  # and outside, this one writes again
    assert "__setattr__" not in Task.__dict__


def test_a_part_without_hooks_gets_no_ops():
    from stratus.scalers.task_per_instance import CheapestPerTask

    class Bare:
        name = "bare"

        def migrate(self, view, plan) -> None:
            pass

    sched = ComposedScheduler("t", scaler=CheapestPerTask(), migrator=Bare())
    res = replay(_trace(10), sched, ReplayConfig(spinup_s=(0.0, 0.0)))
    assert res.summary["tasks_completed"] == 10
