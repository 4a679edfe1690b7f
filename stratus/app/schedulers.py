"""The table of named schedulers and the decorator that fills it. Compositions (the
built-in ones and a plug-in's) import ``register`` from here; ``stratus.app.registry``
loads them and answers lookups.

Two kinds share the names: *policies* (``SCHEDULERS``), scheduler objects the engine
replays, and *cost models* (``COST_MODELS``, ``register_cost_model``), whose factory gives
an object with ``replay(trace, cfg) -> ReplayResult`` that bills a trace without the engine
(AWS Fargate, §4.3). ``stratus.app.runs`` dispatches on ``SchedulerSpec.kind``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stratus.base.errors import ConfigError


@dataclass(frozen=True)
class SchedulerSpec:
    name: str
    factory: Callable[[], object]
    description: str
    estimator: str | None = None  # estimator the scheduler is defined with (None: replay's)
    kind: str = "policy"  # POLICY or COST_MODEL


POLICY = "policy"
COST_MODEL = "cost-model"


SCHEDULERS: dict[str, SchedulerSpec] = {}
COST_MODELS: dict[str, SchedulerSpec] = {}


def register(name: str, description: str, estimator: str | None = None):
    """Decorator: register a zero-argument factory under ``name``."""

    def deco(factory: Callable[[], object]) -> Callable[[], object]:
        if name in SCHEDULERS or name in COST_MODELS:
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
