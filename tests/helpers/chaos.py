"""A seeded random policy that uses every kind of decision, to stress engine invariants:
placements on booting and running instances, acquisitions with pending tasks and with
migrations, migrations between live instances, keep-idle flags and explicit releases."""

from __future__ import annotations

import random

from stratus.base.resources import fits
from stratus.policy.compose import Plan
from stratus.sim.model import RUNNING


class ChaosScheduler:
    name = "chaos"

    def __init__(self, seed: int = 0, migrate_p: float = 0.2, max_moves: int = 2) -> None:
        self.rng = random.Random(seed)
        self.migrate_p = migrate_p
        self.max_moves = max_moves  # per task: big tasks take hours to move at 160 Mbit/s
        self.moves: dict[int, int] = {}

    def schedule(self, view):
        rng = self.rng
        plan = Plan(view)
        insts = list(view.instances)
        types = list(view.catalog)
        pending = list(view.pending)
        taken = set()
        for task in pending:
            if task.tid in taken:
                continue
            r = rng.random()
            cands = [i for i in insts if plan.fits(task, i)]
            if cands and r < 0.5:
                plan.place(task, rng.choice(cands))
                taken.add(task.tid)
            elif r < 0.9:
                itype = rng.choice([t for t in types if fits(task.req, t.capacity)])
                group, free = [task], tuple(c - q for c, q in zip(itype.capacity, task.req))
                for other in pending:  # sometimes co-locate more pending tasks
                    if other.tid not in taken and other is not task and rng.random() < 0.3 \
                            and fits(other.req, free):
                        group.append(other)
                        free = tuple(f - q for f, q in zip(free, other.req))
                taken.update(t.tid for t in group)
                plan.acquire(itype, group, keep=rng.random() < 0.2)
            # else: leave it pending until a later tick
        idle = []
        # the view's readers bound once: this loop visits every task at every tick
        location, state, migrating = view.location, view.state, view.is_migrating
        moves, random = self.moves, rng.random
        for inst in insts:
            tasks = inst.tasks
            if not tasks:
                if inst.keep:
                    idle.append(inst)
                continue
            for task in tasks.values():  # the plan never changes inst.tasks
                if (location(task) is inst and state(task) == RUNNING
                        and not migrating(task) and random() < self.migrate_p
                        and moves.get(task.tid, 0) < self.max_moves):
                    moves[task.tid] = moves.get(task.tid, 0) + 1
                    dests = [d for d in insts if d is not inst and plan.fits(task, d)]
                    if dests and rng.random() < 0.7:
                        plan.migrate(task, rng.choice(dests))
                    else:
                        fitting = [t for t in types if fits(task.req, t.capacity)]
                        plan.acquire(rng.choice(fitting), migrate=[task])
                    break  # at most one migration per instance per tick
        for inst in idle:  # only once nothing else was planned onto it
            if plan.free(inst) == inst.free:
                if rng.random() < 0.3:
                    plan.decisions.releases.append(inst)
                elif rng.random() < 0.3:
                    plan.decisions.keep[inst.iid] = False
        return plan.decisions
