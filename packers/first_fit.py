"""First fit: each pending task goes on the oldest live instance it fits on.

The simplest online packer (and the usual strawman in vector bin packing, Panigrahy et
al. 2011); tasks that fit nowhere are left to the scaler. The oldest fitting instance comes
from a capacity index kept across ticks (packers/free_index.py) rather than a scan of every
instance per task, which grew as n^1.7 on a Google-like day.
"""

from __future__ import annotations

from collections.abc import Sequence

from packers.free_index import LiveIndex
from stratus.compose import Plan
from stratus.model import Task
from stratus.view import ClusterView


class FirstFit:
    name = "first-fit"

    def __init__(self) -> None:
        self._view: ClusterView | None = None
        self._index = LiveIndex()

    def pack(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> list[Task]:
        if not tasks:
            return []
        if len(tasks[0].req) != 2:  # the index is written for (cpu, mem)
            return self._scan(view, plan, tasks)
        index = self._index
        if view is not self._view:  # another replay: start afresh
            self._view, index = view, LiveIndex()
            self._index = index
        index.sync(view.instances)
        for iid in plan.touched():  # capacity this tick's plan already promised
            index.update(view.instance(iid), plan.free(view.instance(iid)))
        left = []
        find, took, insts, place = index.find, index.took, index.insts, plan.place
        for task in tasks:
            s = find(task.req)
            if s < 0:
                left.append(task)
            else:
                took(s, place(task, insts[s]))
        return left

    @staticmethod
    def _scan(view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> list[Task]:
        insts = list(view.instances)
        left = []
        for task in tasks:
            for inst in insts:
                if plan.fits(task, inst):
                    plan.place(task, inst)
                    break
            else:
                left.append(task)
        return left
