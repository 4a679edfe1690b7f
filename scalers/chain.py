"""Several migrators in one tick, in order (e.g. HotSpot hopping, then instance clearing,
for the Stratus §5.2 "SCloud + packing + scaling + clearing" step)."""

from __future__ import annotations

import math

from stratus.policy.compose import Migrator, Part, Plan, flat_stats, part_hooks, part_list
from stratus.sim.contracts import Quiets
from stratus.sim.view import ClusterView


class MigratorChain(Part):
    """Runs each migrator on the same plan; a later one sees what earlier ones decided
    through the plan (its decisions and its cordons). It has no parameters of its own: a
    composed scheduler lists each part's (``ComposedScheduler.parts``)."""

    PARAMS = ()

    def __init__(self, *parts: Migrator) -> None:
        self.parts = parts

    @property
    def name(self) -> str:
        return "+".join(p.name for p in self.parts)  # as their parameters name them now

    def reset(self) -> None:
        for reset, _, _ in map(part_hooks, self.parts):
            reset()

    def start(self, view: ClusterView) -> None:
        for _, start, _ in map(part_hooks, self.parts):
            start(view)

    def migrate(self, view: ClusterView, plan: Plan) -> None:
        for p in self.parts:
            p.migrate(view, plan)

    def quiet(self, view: ClusterView) -> tuple[float, bool]:
        """The earliest of the parts' (stratus.policy.compose.ComposedScheduler.quiet); never if
        a part cannot say."""
        until, prices = math.inf, False
        for p in self.parts:
            if not isinstance(p, Quiets):
                return -math.inf, True
            u, q = p.quiet(view)
            until, prices = min(until, u), prices or q
        return until, prices

    def stats(self) -> dict:
        """The parts' statistics, flat, none overwriting another's
        (``stratus.policy.compose.flat_stats``; a composed scheduler lists each part itself)."""
        by_key: dict[str, dict] = {}
        for key, p in part_list("migrator", self):
            while key in by_key:
                key = f"{key}{sum(k.startswith(key) for k in by_key) + 1}"
            by_key[key] = part_hooks(p)[2]()
        return flat_stats(by_key)
