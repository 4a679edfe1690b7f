"""A minimal cluster view and hand-made instances and tasks, for driving a scheduler's
parts (packers, scalers) directly."""

from __future__ import annotations

import math

from stratus.base.resources import to_units
from stratus.pricing.catalog import M4
from stratus.sim.model import READY, Instance, Task
from stratus.sim.view import CONSTANT
from stratus.testing import StaticView


class FakeView(StaticView):
    """A ``ClusterView`` (all of it, as ``StaticView``) over instances made elsewhere, with
    estimates by task id, remaining runtimes by instance id and prices by type name."""

    def __init__(self, instances=(), estimates=None, remaining=None, catalog=M4, prices=None):
        super().__init__(catalog=catalog)
        self._instances = list(instances)
        self._est = estimates or {}
        self._rem = remaining or {}
        self._prices = prices or {t.name: t.ondemand_hourly for t in catalog}

    @property
    def instances(self):
        return self._instances

    def instance(self, iid):
        for i in self._instances:
            if i.iid == iid:
                return i
        raise KeyError(iid)

    def instance_forms(self, instances):
        return [(CONSTANT, r, 0.0, 0.0, math.inf) for r in self.instances_remaining(instances)]

    def estimate(self, task):
        return self._est[task.tid]

    def instance_remaining(self, inst):
        return self._rem[inst.iid]

    def instances_remaining(self, instances):
        return [self._rem[i.iid] for i in instances]

    def price(self, itype, market=None):
        return self._prices[itype if isinstance(itype, str) else itype.name]

    def acquirable_types(self, shortages=True):
        return list(self.catalog)


def instance(iid, itype, free=None, ready=True):
    inst = Instance(iid, itype, "on-demand", None, 0.0)
    inst.state = READY if ready else 0
    if free is not None:
        inst.free = tuple(free)
    return inst


def task(tid, cpu, mem, est=100.0):
    return Task(tid, tid, 0, 0.0, est, to_units(cpu, mem))
