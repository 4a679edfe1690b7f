"""What a scheduler may ask of the engine at a tick.

Policies return these; the engine validates and applies them in order: acquisitions'
placements, placements, migrations, releases, keeps. An invalid decision raises
DecisionError (a policy bug is never repaired silently).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stratus.pricing.catalog import InstanceType
from stratus.sim.model import Instance, Task


@dataclass(slots=True)
class Place:
    """Put a pending task on an existing instance (it starts when the instance is ready)."""

    task: Task
    instance: Instance


@dataclass(slots=True)
class Acquire:
    """Rent a new instance and give it tasks.

    ``tasks`` are pending tasks that start once it is ready. ``migrate`` are running
    tasks that move onto it once it is ready (they keep running where they are until
    then). ``bid`` is the spot bid in $/h (None: the on-demand price, Stratus §3.3).
    ``keep`` keeps the instance when it goes idle instead of releasing it at once.
    """

    itype: InstanceType
    market: str
    tasks: list[Task] = field(default_factory=list)
    migrate: list[Task] = field(default_factory=list)
    bid: float | None = None
    keep: bool = False


@dataclass(slots=True)
class Migrate:
    """Move a running task to another live instance, keeping its progress (Stratus §3.4).

    The task stops making progress while its memory is transferred and holds resources
    on both instances until the transfer ends (Stratus §4.1, §5.4.1).
    """

    task: Task
    dest: Instance


@dataclass(slots=True)
class Decisions:
    """Everything a scheduler decided at one tick."""

    acquisitions: list[Acquire] = field(default_factory=list)
    placements: list[Place] = field(default_factory=list)
    migrations: list[Migrate] = field(default_factory=list)
    releases: list[Instance] = field(default_factory=list)
    keep: dict[int, bool] = field(default_factory=dict)  # iid -> keep when idle

    def __bool__(self) -> bool:
        return bool(self.acquisitions or self.placements or self.migrations or self.releases
                    or self.keep)


