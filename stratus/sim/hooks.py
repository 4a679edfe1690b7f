"""The engine core's one extension point: add-ons (``AddOn``) called at named moments.

Taken from the places the core used to branch for the waiting gate, the savings plan and
the reserved instances, and from the live mirror's calls to the world. An add-on
overrides the hooks it needs; the core calls only those (``Hooks``): a replay with no
add-ons has empty hook lists and makes no call at all.

Order: the hooks of several add-ons run in the order the add-ons were given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stratus.base.errors import ConfigError

if TYPE_CHECKING:
    from stratus.sim.model import Instance, Task

#: every hook, in the order of a replay's life
HOOKS = ("configure", "attach", "open", "admit", "held", "freed", "started", "moving",
         "sent_back", "released", "bill", "summary")


class AddOn:
    """Base of an add-on: every hook does nothing. The core never calls a hook an add-on
    leaves as it is here. ``claims``: the config fields the add-on acts on (those marked
    ``ADDON`` in stratus.sim.config); a run refuses such a field that no add-on claims."""

    claims: tuple[str, ...] = ()

    def configure(self, cfg) -> None:
        """At resolution (``stratus.sim.config.resolve``): adjust the run's own copy of the
        config, e.g. add price series (``cfg.prices``) or allowed markets
        (``cfg.markets``, a tuple by then). The checks of the resolved config follow."""

    def attach(self, core) -> None:
        """The core is built (before the run): keep what is needed of it, register
        event handlers on ``core.kernel``, cordon markets (``core.applier.cordon``)."""

    def open(self, t: float) -> None:
        """The replay's first tick, before the scheduler starts."""

    def admit(self, tasks: list[Task], t: float) -> None:
        """The tick's arrivals, which the add-on takes instead of the pending queue (it
        puts there those it sends on). At most one add-on admits."""

    def held(self, inst: Instance, task: Task, t: float) -> None:
        """``task`` now holds its request on ``inst`` (placed, waiting, or reserved as
        a migration's destination)."""

    def freed(self, inst: Instance, task: Task, t: float) -> None:
        """``task`` gave back its request on ``inst``."""

    def started(self, task: Task, inst: Instance, t: float) -> None:
        """A run of ``task`` began on ``inst``."""

    def moving(self, task: Task, t: float) -> None:
        """A transfer of ``task`` to its migration destination began."""

    def sent_back(self, task: Task) -> None:
        """``task`` is pending again, on no instance."""

    def released(self, inst: Instance, t: float) -> None:
        """``inst`` was released and billed."""

    def bill(self, bill) -> None:
        """The replay's bill as the result builds it (``stratus.sim.result.Bill``): amend its
        total and costs by market, the prices the lower bounds may rent, the bounds
        (``bill.bounds``), and add summary keys (``bill.keys``)."""

    def summary(self, summary: dict) -> None:
        """The replay's summary, to add the add-on's part to (after ``tasks_unfinished``)."""


class Hooks:
    """Per hook, the bound methods of the add-ons that override it (a tuple, empty when
    none does): ``hooks.held`` is what the core calls for ``held``."""

    __slots__ = HOOKS

    def __init__(self, addons) -> None:
        for a in addons:
            if not isinstance(a, AddOn):
                raise ConfigError(f"an add-on must be a stratus.sim.hooks.AddOn, got {a!r}")
        for name in HOOKS:
            base = getattr(AddOn, name)
            setattr(self, name, tuple(getattr(a, name) for a in addons
                                      if getattr(type(a), name) is not base))
        if len(self.admit) > 1:
            raise ConfigError("two add-ons would take the arrivals (admit): at most one may")


__all__ = ["HOOKS", "AddOn", "Hooks"]
