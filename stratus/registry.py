"""Named schedulers: every composition a user can ask for by name.

Two kinds share the names: *policies* (``SCHEDULERS``), scheduler objects the engine
replays, and *cost models* (``COST_MODELS``), which bill a trace without the engine (AWS
Fargate, §4.3). ``get_spec`` knows both and ``stratus.runs`` dispatches on ``kind``;
``scheduler_names`` lists the policies only (what the engine can run, what ``compare``
replays by default), ``all_names`` both."""

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
    # "policy": factory() is a scheduler for the engine; "cost-model": factory() has
    # replay(trace, cfg) -> ReplayResult and no engine runs
    kind: str = "policy"


POLICY = "policy"
COST_MODEL = "cost-model"


SCHEDULERS: dict[str, SchedulerSpec] = {}
COST_MODELS: dict[str, SchedulerSpec] = {}


def register(name: str, description: str, estimator: str | None = None):
    """Decorator: register a zero-argument factory under ``name``."""

    def deco(factory: Callable[[], object]) -> Callable[[], object]:
        if name in SCHEDULERS:
            raise ConfigError(f"scheduler {name!r} registered twice")
        SCHEDULERS[name] = SchedulerSpec(name, factory, description, estimator)
        return factory

    return deco


def register_cost_model(name: str, description: str):
    """Decorator: register a zero-argument factory of a cost model under ``name``."""

    def deco(factory: Callable[[], object]) -> Callable[[], object]:
        if name in SCHEDULERS or name in COST_MODELS:
            raise ConfigError(f"scheduler {name!r} registered twice")
        COST_MODELS[name] = SchedulerSpec(name, factory, description, "oracle", COST_MODEL)
        return factory

    return deco


def _load_builtins() -> None:
    if not COST_MODELS:
        import stratus.fargate  # noqa: F401  (registers on import)
    if SCHEDULERS:
        return
    import stratus.builtin  # noqa: F401  (registers on import)


def scheduler_names() -> list[str]:
    _load_builtins()
    return list(SCHEDULERS)


def all_names() -> list[str]:
    """Policies, then cost models."""
    _load_builtins()
    return [*SCHEDULERS, *COST_MODELS]


def get_spec(name: str) -> SchedulerSpec:
    _load_builtins()
    spec = SCHEDULERS.get(name) or COST_MODELS.get(name)
    if spec is None:
        raise ConfigError(f"unknown scheduler {name!r}; known: {', '.join(all_names())}")
    return spec


def make_scheduler(name: str):
    spec = get_spec(name)
    if spec.kind != POLICY:
        raise ConfigError(f"{name!r} is a cost model, not a scheduler the engine can run; "
                          f"use stratus.engine.replay or the command line")
    return spec.factory()
