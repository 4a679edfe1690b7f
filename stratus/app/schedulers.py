"""The table of named schedulers and the decorator that fills it. Compositions (the
built-in ones and a plug-in's) import ``register`` from here; ``stratus.app.registry``
loads them and answers lookups.

Two kinds share the names: *policies* (``SCHEDULERS``), scheduler objects the engine
replays, and *cost models* (``COST_MODELS``, ``register_cost_model``), whose factory gives
an object with ``replay(trace, cfg) -> ReplayResult`` that bills a trace without the engine
(AWS Fargate, §4.3). ``stratus.app.runs`` dispatches on ``SchedulerSpec.kind``.

A policy's factory may take keyword arguments, its *options* (what the composition
varies: ``scloud(pack=False, scale=False, clear=False)``), each with a default that is a
flag, a number or a word (``typing.Literal`` lists the words it takes); called with none it
is the registered scheduler. ``alias`` registers a name for a factory with some options
set (``scloud+pack`` is ``scloud?pack=true``), and optionally its own estimator."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, field

from stratus.base.errors import ConfigError


@dataclass(frozen=True)
class Option:
    """One keyword argument of a scheduler's factory: its default, and the words it takes
    (None: any value of the default's type)."""

    name: str
    default: bool | int | float | str
    choices: tuple[str, ...] | None = None

    def check(self, value, where: str):
        """``value`` (text or typed) as this option's type; a ConfigError naming ``where``."""
        from stratus.policy.params import coerce

        v = coerce(f"{where}: {self.name}", value, self.default)
        if self.choices is not None and v not in self.choices:
            raise ConfigError(f"{where}: {self.name}: takes {' or '.join(self.choices)}, got "
                              f"{value!r}")
        return v


@dataclass(frozen=True)
class SchedulerSpec:
    name: str
    factory: Callable[[], object]
    description: str
    estimator: str | None = None  # estimator the scheduler is defined with (None: replay's)
    kind: str = "policy"  # POLICY or COST_MODEL
    #: the options its (base) factory declares, by name
    options: dict[str, Option] = field(default_factory=dict, compare=False)
    #: the registered scheduler whose factory this one calls (None: its own), and with
    #: which options (an alias's preset; not those equal to the default)
    base: str | None = None
    preset: dict = field(default_factory=dict, compare=False)
    #: why it is a reference, not a competitor (e.g. it is given perfect runtimes); "" for
    #: a competitor. Reports mark references (stratus.app.figures).
    reference: str = field(default="", compare=False)


POLICY = "policy"
COST_MODEL = "cost-model"


SCHEDULERS: dict[str, SchedulerSpec] = {}
COST_MODELS: dict[str, SchedulerSpec] = {}

SCALARS = (bool, int, float, str)


def factory_options(name: str, factory: Callable) -> dict[str, Option]:
    """The options ``factory`` declares: its parameters, each with a flag, number or word as
    default (a ``Literal[...]`` annotation: the words it takes)."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return {}
    try:
        hints = typing.get_type_hints(factory.__init__ if inspect.isclass(factory) else factory)
    except Exception:  # an annotation that does not resolve: no word lists
        hints = {}
    out = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is p.empty or \
                not isinstance(p.default, SCALARS):
            raise ConfigError(f"scheduler {name!r}: factory argument {p.name!r} is not an "
                              f"option (a keyword argument whose default is a flag, a number "
                              f"or a word)")
        hint = hints.get(p.name)
        choices = None
        if typing.get_origin(hint) is typing.Literal:
            choices = tuple(str(c) for c in typing.get_args(hint))
            if p.default not in choices:
                raise ConfigError(f"scheduler {name!r}: option {p.name!r}: default "
                                  f"{p.default!r} is not one of {', '.join(choices)}")
        out[p.name] = Option(p.name, p.default, choices)
    return out


def check_options(spec: SchedulerSpec, given: dict, where: str) -> dict:
    """``given`` options of ``spec``'s factory, checked and typed."""
    out = {}
    for k, v in given.items():
        opt = spec.options.get(k)
        if opt is None:
            known = ", ".join(spec.options)
            raise ConfigError(f"{where}: no option {k!r} "
                              + (f"(options: {known}; " if known else "(it takes no options; ")
                              + "a part's parameter is KEY.NAME)")
        out[k] = opt.check(v, where)
    return out


def _taken(name: str) -> None:
    if name in SCHEDULERS or name in COST_MODELS:
        raise ConfigError(f"scheduler {name!r} registered twice")
    if "?" in name or "," in name:
        raise ConfigError(f"scheduler {name!r}: a name may not hold '?' or ','")


def register(name: str, description: str, estimator: str | None = None):
    """Decorator: register a factory under ``name``; its keyword arguments, if any, are the
    scheduler's options (``NAME?OPTION=VALUE``)."""

    def deco(factory: Callable[[], object]) -> Callable[[], object]:
        _taken(name)
        SCHEDULERS[name] = SchedulerSpec(name, factory, description, estimator,
                                         options=factory_options(name, factory))
        return factory

    return deco


def alias(name: str, of: str, description: str, options: dict | None = None,
          estimator: str | None = None, reference: str = "") -> SchedulerSpec:
    """Register ``name`` as the registered scheduler ``of`` with ``options`` set (and
    ``estimator``, None: ``of``'s): it replays as ``of?OPTIONS`` and keeps its own name.
    ``reference``: why reports should show it as a reference, not a competitor."""
    _taken(name)
    base = SCHEDULERS.get(of)
    if base is None:
        raise ConfigError(f"alias {name!r}: no scheduler {of!r} registered (yet)")
    root = SCHEDULERS[base.base] if base.base else base
    preset = {**base.preset, **check_options(root, options or {}, f"alias {name!r}")}
    preset = {k: v for k, v in preset.items() if v != root.options[k].default}
    est = base.estimator if estimator is None else estimator
    for other in SCHEDULERS.values():
        if (other.base or other.name) == root.name and other.estimator == est and \
                other.preset == preset:
            raise ConfigError(f"alias {name!r}: the same scheduler as {other.name!r}")
    spec = SchedulerSpec(name, WithParams(root.factory, name, {}, preset), description, est,
                         options=root.options, base=root.name, preset=preset,
                         reference=reference)
    SCHEDULERS[name] = spec
    return spec


class WithParams:
    """A registered factory called with ``options``, then its scheduler's parts'
    ``params`` set and its name made ``name`` (a module-level class: worker processes
    receive it pickled)."""

    def __init__(self, factory: Callable[..., object], name: str, params: dict,
                 options: dict | None = None) -> None:
        self.factory, self.name, self.params = factory, name, params
        self.options = options or {}

    def __call__(self):
        sched = self.factory(**self.options)
        if self.params:
            sched = sched.set_params(**self.params)
        sched.name = self.name
        return sched


def register_cost_model(name: str, description: str):
    """Decorator: register a zero-argument factory of a cost model under ``name``."""

    def deco(factory: Callable[[], object]) -> Callable[[], object]:
        _taken(name)
        COST_MODELS[name] = SchedulerSpec(name, factory, description, "oracle", COST_MODEL)
        return factory

    return deco
