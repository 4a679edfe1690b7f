"""First fit: each pending task goes on the oldest live instance it fits on.

The simplest online packer (and the usual strawman in vector bin packing, Panigrahy et
al. 2011); tasks that fit nowhere are left to the scaler. The oldest fitting instance comes
from a capacity index kept across ticks (packers/free_index.py) rather than a scan of every
instance per task, which grew as n^1.7 on a Google-like day.
"""

from __future__ import annotations

from collections.abc import Sequence

from stratus.packers.free_index import LiveIndex, SlotRun
from stratus.policy.compose import Plan
from stratus.policy.params import Parametric
from stratus.sim.model import Task
from stratus.sim.view import ClusterView


class FirstFit(Parametric):
    """Packer. Cordoned instances (``Plan.cordon``: e.g. drained by a consolidation) get no
    tasks (as Stratus §3.4 blacklists cleared instances); ``index`` gives the tick's synced
    capacity index to other parts."""

    label = "first-fit"
    PARAMS = ()

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A new replay: instance ids start again."""
        self._index = LiveIndex()
        self._plan: Plan | None = None

    def index(self, view: ClusterView, plan: Plan) -> LiveIndex:
        """The capacity index in step with ``view`` and what ``plan`` promised so far
        (synced once per plan; parts that place through it must call ``took``).
        Cordoned instances' slots are dead in the tree (Stratus §3.4), from the moment
        they are cordoned."""
        index = self._index
        if plan is not self._plan:
            self._plan = plan
            index.sync(view.instances)
            for iid in plan.touched():  # capacity this tick's plan already promised
                index.update(view.instance(iid), plan.free(view.instance(iid)))

            for iid in plan.cordoned:
                index.retire(iid)
            plan.on_cordon(index.retire)
        return index

    def pack(self, view: ClusterView, plan: Plan, tasks: Sequence[Task]) -> list[Task]:
        if not tasks:
            return []
        index = self.index(view, plan)
        left = []
        find, took, insts, place = index.find, index.took, index.insts, plan.place
        run = SlotRun(index)  # anti-affinity
        for task in tasks:
            if task.anti_affinity:
                s = run.find(task, plan.avoid(task))
            else:
                if run.job is not None:
                    run.end()
                s = find(task.req)
            if s < 0:
                left.append(task)
            elif task.anti_affinity:
                run.took(s, place(task, insts[s]))
            else:
                took(s, place(task, insts[s]))
        run.end()
        return left
