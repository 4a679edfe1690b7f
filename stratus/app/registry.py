"""Names a user can ask for: schedulers (compositions of parts) and runtime estimators.

The core takes objects; names are resolved here, in the application layer. The built-in
compositions are in ``stratus.app.builtin``. Another installed package adds schedulers
through the ``stratus.schedulers`` entry-point group: each entry point names a module whose
import registers its schedulers with ``stratus.app.schedulers.register``, or a function
that does so when called.
"""

from __future__ import annotations

from collections.abc import Callable

from stratus.app.schedulers import (
    COST_MODEL,
    COST_MODELS,
    POLICY,
    SCHEDULERS,
    Option,
    SchedulerSpec,
    WithParams,
    alias,
    check_options,
    register,
)
from stratus.base.errors import ConfigError
from stratus.policy.estimators import NoisyEstimator, RequestedEstimator
from stratus.sim.estimate import Estimator, OracleEstimator

ENTRY_POINT_GROUP = "stratus.schedulers"
__all__ = ["COST_MODEL", "COST_MODELS", "ENTRY_POINT_GROUP", "POLICY", "SCHEDULERS", "Option",
           "SchedulerSpec", "WithParams", "alias", "all_names", "get_spec", "make_estimator",
           "make_scheduler", "register", "register_estimator", "scheduler_names",
           "scheduler_options"]


_loaded = False


def _entry_points() -> list:
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP))


def _load() -> None:
    """The built-in compositions, then every installed plug-in (once)."""
    global _loaded
    if _loaded:
        return
    _loaded = True  # first: a plug-in may look names up while it registers
    import stratus.app.builtin  # noqa: F401  (registers on import)
    import stratus.app.costmodels  # noqa: F401  (registers on import)

    for ep in _entry_points():
        try:
            obj = ep.load()
            if callable(obj):
                obj()
        except ConfigError:
            raise
        except Exception as exc:  # a broken plug-in is named, not a traceback
            raise ConfigError(f"scheduler plug-in {ep.name!r} ({ep.value}) failed to load: "
                              f"{type(exc).__name__}: {exc}") from None


def scheduler_names() -> list[str]:
    """The policies: what the engine replays, and ``compare``'s default set."""
    _load()
    return list(SCHEDULERS)


def all_names() -> list[str]:
    """Policies, then cost models (``fargate``): every name ``replay``/``compare`` take."""
    _load()
    return [*SCHEDULERS, *COST_MODELS]


def is_cost_model(name: str) -> bool:
    """Whether ``name`` (perhaps with ``?options``) is a cost model such as fargate, which
    bills the trace itself rather than replaying a policy."""
    _load()
    return name.partition("?")[0] in COST_MODELS


def reference_of(name: str) -> str:
    """Why the scheduler ``name`` (a registered name, perhaps with ``?options``) is a
    reference rather than a competitor, or "" (a competitor, or a name not registered)."""
    _load()
    spec = SCHEDULERS.get(name.partition("?")[0])
    return spec.reference if spec is not None else ""


def get_spec(name: str) -> SchedulerSpec:
    """The scheduler ``name``: a registered one, or ``NAME?KEY=VALUE&...`` with some of its
    factory's options (keys without a dot, ``scloud?pack=true``) and its parts' parameters
    (``KEY.NAME``, ``stratus?clearing.threshold=0.4``) set, checked now. An alias's options
    are its preset, which a query's override. The result is named canonically: the
    registered name nearest its options (``scloud?pack=true`` is ``scloud+pack``), then the
    options that differ from that name's, then the parameters that differ from their
    defaults, each sorted."""
    _load()
    base, q, query = name.partition("?")
    spec = SCHEDULERS.get(base) or COST_MODELS.get(base)
    if spec is None:
        raise ConfigError(f"unknown scheduler {base!r}; known: {', '.join(all_names())}")
    if not q:
        return spec
    from stratus.policy import params as P

    where = f"scheduler {name}"
    given = P.parse(query, where)
    if spec.kind != POLICY:
        raise ConfigError(f"{where}: {base} is a cost model and takes no parameters")
    root = SCHEDULERS[spec.base] if spec.base else spec
    options = {**spec.preset, **check_options(
        root, {k: v for k, v in given.items() if "." not in k}, where)}
    options = {k: v for k, v in options.items() if v != root.options[k].default}
    params = {k: v for k, v in given.items() if "." in k}
    typed: dict = {}
    probe = root.factory(**options)  # a factory may refuse a combination of options
    if params:
        if not hasattr(probe, "set_params"):
            raise ConfigError(f"{where}: {base} takes no parameters (it is not composed of "
                              f"parts)")
        probe.name = base
        default = probe.get_params()
        probe.set_params(**params)
        # a value equal to the default is no change: ``stratus?clearing.threshold=0.5`` is
        # stratus
        typed = {k: v for k, v in probe.get_params().items() if k in params and v != default[k]}
    near = _nearest(root, spec.estimator, options)
    differ = {k: options.get(k, root.options[k].default)
              for k in {*options, *near.preset}
              if options.get(k, root.options[k].default) !=
              near.preset.get(k, root.options[k].default)}
    if not differ and not typed:
        return near
    text = "&".join(filter(None, (P.canonical(differ), P.canonical(typed))))
    full = f"{near.name}?{text}"
    return SchedulerSpec(full, WithParams(root.factory, full, typed, options), near.description,
                         near.estimator, near.kind, root.options, root.name, options)


def _nearest(root: SchedulerSpec, estimator: str | None, options: dict) -> SchedulerSpec:
    """Of the names registered for ``root``'s factory with ``estimator``, the one whose
    options are nearest ``options``: fewest to write, then fewest preset, then the earliest
    registered (``root`` itself if it has that estimator and nothing is nearer)."""
    def distance(s: SchedulerSpec) -> tuple[int, int]:
        keys = {*options, *s.preset}
        return (sum(options.get(k) != s.preset.get(k) for k in keys), len(s.preset))

    same = [s for s in SCHEDULERS.values()
            if (s.base or s.name) == root.name and s.estimator == estimator]
    return min(same, key=distance)  # min keeps the first of equals: registration order


def scheduler_options(name: str) -> dict[str, Option]:
    """The options the factory of scheduler ``name`` declares."""
    return get_spec(name).options


def make_scheduler(name: str):
    spec = get_spec(name)
    if spec.kind != POLICY:
        raise ConfigError(f"{name!r} is a cost model, not a scheduler the engine can run; "
                          f"stratus.app.runs replays it (or call its factory's replay)")
    return spec.factory()


# --- runtime estimators -------------------------------------------------------------------
def _history(arg: str | None, seed: int) -> Estimator:
    from stratus.policy.history import HistoryEstimator

    if arg:  # options where the paper is silent (stratus.policy.history_options)
        from stratus.policy.history_options import HistoryOptionsEstimator

        return HistoryOptionsEstimator(tuple(arg.split("+")))
    return HistoryEstimator()


def _parse_h(arg: str | None) -> float:
    if arg is None:
        raise ConfigError("noisy estimator needs a factor, e.g. --estimator noisy:0.5")
    try:
        return float(arg)
    except ValueError:
        raise ConfigError(f"noisy estimator: h must be a number, got {arg!r}") from None


ESTIMATORS: dict[str, Callable[[str | None, int], Estimator]] = {
    "oracle": lambda arg, seed: OracleEstimator(),
    "noisy": lambda arg, seed: NoisyEstimator(_parse_h(arg), seed),
    "history": _history,
    "requested": lambda arg, seed: RequestedEstimator(),
}


def register_estimator(name: str, factory: Callable[[str | None, int], Estimator]) -> None:
    ESTIMATORS[name] = factory


def make_estimator(spec: str | Estimator, seed: int = 0) -> Estimator:
    """``oracle``, ``noisy:H``, ``history`` or another registered name (``name[:arg]``)."""
    if isinstance(spec, Estimator):
        return spec
    if not isinstance(spec, str):
        raise ConfigError(f"an estimator is a name or an Estimator instance, got {spec!r}")
    name, _, arg = spec.partition(":")
    try:
        factory = ESTIMATORS[name]
    except KeyError:
        raise ConfigError(f"unknown estimator {spec!r}; known: {', '.join(sorted(ESTIMATORS))}") from None
    return factory(arg or None, seed)
