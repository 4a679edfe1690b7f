"""The table of named schedulers and the decorator that fills it. Compositions (the
built-in ones and a plug-in's) import ``register`` from here; ``stratus.app.registry``
loads them and answers lookups."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stratus.errors import ConfigError


@dataclass(frozen=True)
class SchedulerSpec:
    name: str
    factory: Callable[[], object]
    description: str
    estimator: str | None = None  # estimator the scheduler is defined with (None: replay's)


SCHEDULERS: dict[str, SchedulerSpec] = {}


def register(name: str, description: str, estimator: str | None = None):
    """Decorator: register a zero-argument factory under ``name``."""

    def deco(factory: Callable[[], object]) -> Callable[[], object]:
        if name in SCHEDULERS:
            raise ConfigError(f"scheduler {name!r} registered twice")
        SCHEDULERS[name] = SchedulerSpec(name, factory, description, estimator)
        return factory

    return deco
