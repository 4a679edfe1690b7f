"""Several migrators in one tick, in order (e.g. HotSpot hopping, then instance clearing,
for the Stratus §5.2 "SCloud + packing + scaling + clearing" step)."""

from __future__ import annotations

import math

from stratus.compose import Migrator, Part, Plan, part_hooks
from stratus.view import ClusterView


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
        """The earliest of the parts' (stratus.compose.ComposedScheduler.quiet); never if
        a part cannot say."""
        until, prices = math.inf, False
        for p in self.parts:
            quiet = getattr(p, "quiet", None)
            if quiet is None:
                return -math.inf, True
            u, q = quiet(view)
            until, prices = min(until, u), prices or q
        return until, prices

    def stats(self) -> dict:
        out: dict = {}
        for _, _, stats in map(part_hooks, self.parts):
            out.update(stats())
        return out
