"""Several migrators in one tick, in order (e.g. HotSpot hopping, then instance clearing,
for the Stratus §5.2 "SCloud + packing + scaling + clearing" step)."""

from __future__ import annotations

from stratus.compose import Migrator, Plan
from stratus.view import ClusterView


class MigratorChain:
    """Runs each migrator on the same plan; a later one sees what earlier ones decided
    through the plan (and through a packer blacklist they share)."""

    def __init__(self, *parts: Migrator) -> None:
        self.parts = parts
        self.name = "+".join(p.name for p in parts)

    def reset(self) -> None:
        for p in self.parts:
            if hasattr(p, "reset"):
                p.reset()

    def start(self, view: ClusterView) -> None:
        for p in self.parts:
            if hasattr(p, "start"):
                p.start(view)

    def migrate(self, view: ClusterView, plan: Plan) -> None:
        for p in self.parts:
            p.migrate(view, plan)

    def stats(self) -> dict:
        out: dict = {}
        for p in self.parts:
            if hasattr(p, "stats"):
                out.update(p.stats())
        return out
