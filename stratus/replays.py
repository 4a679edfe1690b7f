"""A replay with its add-ons: the engine (``stratus.sim.engine.Engine``) built with the
add-ons its config asks for (its commitments, ``stratus.commitments.addons_for``).

The core knows no add-on; this is where a replay's parts meet. The application layer
(``stratus.app.runs``), the benchmarks and the tests build their engines here.
"""

from __future__ import annotations

from dataclasses import fields, replace

from stratus.base.errors import ConfigError
from stratus.commitments.addons import addons_for
from stratus.sim.config import ReplayConfig
from stratus.sim.contracts import Schedules
from stratus.sim.engine import Engine
from stratus.sim.result import ReplayResult
from stratus.traces.schema import Trace


def engine(trace: Trace, scheduler, cfg: ReplayConfig, addons=()) -> Engine:
    """An engine for one replay of ``trace`` under ``scheduler``, with the add-ons
    ``cfg`` asks for and then ``addons`` (more of the caller's)."""
    return Engine(trace, scheduler, cfg, (*addons_for(cfg), *addons))


def replay(trace: Trace, scheduler, cfg: ReplayConfig | None = None, **overrides) -> ReplayResult:
    """Replay ``trace`` under ``scheduler``, an object with ``schedule(view)`` (names are
    resolved by the application layer, ``stratus.app.registry.make_scheduler``; see
    ``stratus.policy.compose.Scheduler``). ``overrides`` set fields of a copy of ``cfg``:
    neither ``cfg`` nor ``scheduler`` carries anything into the next replay."""
    cfg = cfg or ReplayConfig()
    known = {f.name for f in fields(cfg)}
    for k in overrides:
        if k not in known:
            raise ConfigError(f"unknown replay option {k!r}")
    if overrides:
        cfg = replace(cfg, **overrides)
    if not isinstance(scheduler, Schedules):  # a name (a str) has no schedule()
        raise ConfigError(f"replay takes a scheduler object, got {scheduler!r} "
                          f"(stratus.app.registry.make_scheduler resolves a name)")
    return engine(trace, scheduler, cfg).run()


__all__ = ["engine", "replay"]
