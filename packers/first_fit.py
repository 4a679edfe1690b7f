"""First fit: each pending task goes on the oldest live instance it fits on.

The simplest online packer (and the usual strawman in vector bin packing, Panigrahy et
al. 2011); tasks that fit nowhere are left to the scaler.
"""

from __future__ import annotations

from collections.abc import Sequence

from stratus.compose import Plan
from stratus.model import Task
from stratus.view import ClusterView


class FirstFit:
    name = "first-fit"

    def pack(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> list[Task]:
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
