"""Named schedulers: every composition a user can ask for by name."""

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


def _load_builtins() -> None:
    if SCHEDULERS:
        return
    import stratus.builtin  # noqa: F401  (registers on import)


def scheduler_names() -> list[str]:
    _load_builtins()
    return list(SCHEDULERS)


def get_spec(name: str) -> SchedulerSpec:
    _load_builtins()
    try:
        return SCHEDULERS[name]
    except KeyError:
        raise ConfigError(f"unknown scheduler {name!r}; known: {', '.join(SCHEDULERS)}") from None


def make_scheduler(name: str):
    return get_spec(name).factory()
