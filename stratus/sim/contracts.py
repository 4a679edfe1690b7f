"""What the core may ask of the objects it is given, declared (in the style of the
Kubernetes scheduling framework: one small interface per extension point). A scheduler
has ``schedule(view) -> Decisions`` (``stratus.policy.compose.Scheduler``); the hooks
below are optional, and the core, the live loop and the parts ask for them through these
protocols only, never by probing an attribute."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Schedules(Protocol):
    def schedule(self, view):
        """This tick's decisions (``stratus.sim.decisions.Decisions``)."""


@runtime_checkable
class HasParams(Protocol):
    def get_params(self) -> dict:
        """The scheduler's parameters by part and name (``ComposedScheduler.get_params``)."""


@runtime_checkable
class Named(Protocol):
    """A scheduler or part with a name for messages and summaries."""

    name: str


@runtime_checkable
class Resets(Protocol):
    def reset(self) -> None:
        """A new replay, before any other call: forget ids, counts, caches, cursors."""


@runtime_checkable
class Starts(Protocol):
    def start(self, view) -> None:
        """The new replay's view (``stratus.sim.view.ClusterView``), before the first tick."""


@runtime_checkable
class Reports(Protocol):
    def stats(self) -> dict:
        """This replay's counts, by name (namespaced by part in the summary: ``part_stats``)."""


@runtime_checkable
class Quiets(Protocol):
    def quiet(self, view) -> tuple[float, bool]:
        """(until, prices): see ``stratus.policy.compose.ComposedScheduler.quiet``."""


def name_of(obj) -> str:
    """``obj.name``, or its class's name when it declares none."""
    return obj.name if isinstance(obj, Named) else type(obj).__name__


__all__ = ["HasParams", "Named", "Quiets", "Reports", "Resets", "Schedules", "Starts",
           "name_of"]
