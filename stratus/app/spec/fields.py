"""The parts of a run specification: validators (what a user can write, to the canonical
value), ``opt`` (a field with its one default and one validator) and ``Spec``."""

from __future__ import annotations

import contextvars
import dataclasses
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from stratus.base.bounds import (
    MAX_HOURS,
    MAX_INSTANT_S,
    MAX_SECONDS,
    MAX_SPINUP_S,
    MAX_TICK_S,
    MIN_TICK_S,
)
from stratus.base.errors import ConfigError, plain
from stratus.base.inputs import check_input

CATALOG_HELP = ("instance catalog: a built-in name (see `stratus catalogs`) or your own "
                "catalog file, .toml or .csv")


class Bad(ValueError):
    """A value an option does not take; the message says what it takes."""


def _api_label(name: str) -> str:
    return name


#: how an option is named in an error: by the caller (CLI, sweep config, API)
LABEL: contextvars.ContextVar[Callable[[str], str]] = contextvars.ContextVar(
    "stratus_spec_label", default=_api_label)


@contextmanager
def labelled(label: Callable[[str], str]) -> Iterator[None]:
    token = LABEL.set(label)
    try:
        yield
    finally:
        LABEL.reset(token)


def cli_label(name: str) -> str:
    return "--" + name.replace("_", "-")


# --- validators -----------------------------------------------------------------------------
def _num(x: float) -> str:
    """A bound as a user reads it: 315360000, not 3.1536e+08; 1e+11 stays short."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e10 else f"{x:g}"


def number(what: str, lo: float | None = None, above: bool = False, hi: float | None = None,
           integer: bool = False, optional: bool = False) -> Callable[[Any], Any]:
    """A finite number (an integer with ``integer``) >= lo (> lo with ``above``), <= hi."""
    def check(v):
        if v is None and optional:
            return None
        x = None
        if isinstance(v, str):
            try:
                x = int(v) if integer else float(v)
            except ValueError:
                x = None
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            x = v
            if integer and isinstance(v, float):
                x = int(v) if v.is_integer() else None
        ok = x is not None and math.isfinite(x) and (
            lo is None or (x > lo if above else x >= lo)) and (hi is None or x <= hi)
        if not ok:
            bound = "" if lo is None else f" {'>' if above else '>='} {_num(lo)}"
            bound += "" if hi is None else f" and <= {_num(hi)}"
            raise Bad(f"takes {what}{bound}, got {v!r}")
        return int(x) if integer else float(x)
    return check


def seconds(lo: float = 0.0, above: bool = False, hi: float = MAX_SECONDS,
            optional: bool = False) -> Callable[[Any], Any]:
    """A duration in seconds within its sane range (stratus.base.bounds)."""
    return number("a number of seconds", lo, above=above, hi=hi, optional=optional)


def span_hours(optional: bool = False) -> Callable[[Any], Any]:
    """A duration in hours, > 0 and at most ten years (stratus.base.bounds)."""
    return number("a number of hours", 0, above=True, hi=MAX_HOURS, optional=optional)


def instant(optional: bool = False) -> Callable[[Any], Any]:
    """A point in trace (or price-history) time, in seconds, within +-MAX_INSTANT_S."""
    return number("a number of seconds", -MAX_INSTANT_S, hi=MAX_INSTANT_S, optional=optional)


def tick_seconds() -> Callable[[Any], Any]:
    return seconds(MIN_TICK_S, hi=MAX_TICK_S)


def text(choices: tuple[str, ...] | None = None, optional: bool = False,
         what: str = "a string") -> Callable[[Any], Any]:
    def check(v):
        if v is None and optional:
            return None
        if not isinstance(v, str) or (choices is None and not v.strip()):
            raise Bad(f"takes {what}, got {v!r}")
        if choices is not None and v not in choices:
            raise Bad(f"takes {' or '.join(choices)}, got {v!r}")
        return v
    return check


def flag(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise Bad(f"takes true or false, got {v!r}")


def names(default_ok: bool = True) -> Callable[[Any], Any]:
    """Comma-separated names or a list of them, as a tuple (None: the command's default)."""
    def check(v):
        if v is None and default_ok:
            return None
        items = v.split(",") if isinstance(v, str) else v
        if not isinstance(items, (list, tuple)) or not all(isinstance(x, str) for x in items):
            raise Bad(f"takes comma-separated names or a list of names, got {v!r}")
        out = tuple(x.strip() for x in items if x.strip())
        if not out:
            raise Bad("names no scheduler")
        if len(set(out)) != len(out):
            raise Bad(f"names one twice: {v!r}")
        return out
    return check


def numbers(what: str, lo: float = 0.0, above: bool = True) -> Callable[[Any], Any]:
    one = number(what, lo, above=above)

    def check(v):
        items = v.split(",") if isinstance(v, str) else v
        if not isinstance(items, (list, tuple)):
            items = [items]
        vals = [one(x.strip() if isinstance(x, str) else x) for x in items
                if not (isinstance(x, str) and not x.strip())]
        if not vals:
            raise Bad(f"takes comma-separated {what}, got {v!r}")
        return tuple(sorted(set(vals)))
    return check


def _catalog(v):
    if not isinstance(v, str) or not v.strip():
        raise Bad(f"takes a catalog name or file, got {v!r}")
    from stratus.pricing.catalog_files import get_catalog

    get_catalog(v)  # an unknown name or a bad file: its own one-line error
    return v


def _scheduler(v):
    if not isinstance(v, str):
        raise Bad(f"takes a scheduler name, got {v!r}")
    from stratus.app.registry import get_spec

    return get_spec(v).name  # parameters in one canonical form: one cell, one name


def _estimator(v):
    if v is None:
        return None
    if not isinstance(v, str):
        raise Bad(f"takes oracle, noisy:H, requested or history[:OPTS], got {v!r}")
    from stratus.app.registry import make_estimator

    make_estimator(v, 0)
    return v


def _warmup(v):
    from stratus.traces.spec import warmup_hours

    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise Bad(f"takes a number of hours or 'auto', got {v!r}")
    if isinstance(v, str) and v.strip().lower() == "auto":
        return "auto"
    warmup_hours(v, 1.0)
    return repr(float(v))


def _spinup(v):
    try:
        lo, hi = (float(x) for x in str(v).split(","))
    except ValueError:
        raise Bad(f"takes LO,HI in seconds, got {v!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 <= lo <= hi <= MAX_SPINUP_S):
        raise Bad(f"takes LO,HI in seconds with 0 <= LO <= HI <= {MAX_SPINUP_S:g}, got {v!r}")
    return f"{lo!r},{hi!r}"


def _footprint(v):
    from stratus.sim.footprint import footprint_name

    return footprint_name(str(v))


def _faults(v):
    if v is None:
        return None
    from stratus.sim.faults import parse_faults

    parse_faults(str(v))
    return str(v)


def reserved_pairs(name: str) -> Callable[[Any], Any]:
    """The validator of option ``name`` (its errors name it): ``TYPE:COUNT[,TYPE:COUNT...]``
    in canonical form (None: none); the types are checked against the catalog by the spec
    (CloudSpec.check, WaitingSpec.check)."""
    def check(v):
        if v is None:
            return None
        from stratus.commitments.reserved import parse_reserved, reserved_text

        if isinstance(v, (list, tuple)):  # a sweep config's list of "TYPE:COUNT" items
            if not all(isinstance(x, str) for x in v):
                raise Bad(f"takes TYPE:COUNT[,TYPE:COUNT...], got {v!r}")
            v = ",".join(v)
        if not isinstance(v, str):
            raise Bad(f"takes TYPE:COUNT[,TYPE:COUNT...], got {v!r}")
        return reserved_text(parse_reserved(v, LABEL.get()(name))) or None
    return check


_reserved = reserved_pairs("reserved")


def _waiting(v):
    """``POLICY[:b=SECONDS,t=SECONDS,share=on|off]`` in canonical form (None: none)."""
    if v is None:
        return None
    if not isinstance(v, str):
        raise Bad(f"takes POLICY[:b=SECONDS,t=SECONDS,share=on|off], got {v!r}")
    from stratus.commitments.gate import parse_waiting

    w = parse_waiting(v, LABEL.get()("waiting"))
    return None if w is None else w.text()


def _savings_plan(v):
    """``USD_PER_HOUR[:DISCOUNT]`` in canonical form, the discount filled in (None: no
    plan); a number is the rate, a ``stratus.commitments.savings.SavingsPlan`` itself."""
    if v is None:
        return None
    from stratus.commitments.savings import parse_savings_plan

    plan = parse_savings_plan(v, LABEL.get()("savings_plan"))
    return None if plan is None else plan.text()


def _discount(v):
    if v is None:
        return None
    try:
        x = number("a fraction", 0, hi=1)(v)
    except Bad:
        x = None
    if x is None or not x < 1:
        raise Bad(f"takes a fraction >= 0 and < 1, got {v!r}")
    return x


def _market(v):
    if v not in ("spot", "on-demand"):
        raise ConfigError(f"unknown market {v!r} for elastic acquisitions; known: on-demand, "
                          f"spot")
    return v


def _on_off(v):
    if isinstance(v, bool):
        return "on" if v else "off"
    if v not in ("on", "off"):
        raise Bad(f"takes on or off, got {v!r}")
    return v


def _path(v):
    if v is None:
        return None
    if not isinstance(v, str) or not v:
        raise Bad(f"takes a file path, got {v!r}")
    check_input(v)  # a FIFO would block the reader: refused before any work
    return v


def _cache_dir(v):
    if v is None:
        return None
    if not isinstance(v, str) or not v.strip():
        raise Bad(f"takes a directory, got {v!r}")
    from stratus.traces.cache import check_dir

    check_dir(v)
    return v


def _trace(v):
    if not isinstance(v, str) or not v.strip():
        raise Bad(f"takes synthetic:NAME[?k=v&...] or a trace file, got {v!r}")
    if v.startswith("synthetic:"):
        from stratus.traces.spec import parse_synthetic
        from stratus.traces.synthetic import checked

        name, params = parse_synthetic(v)
        checked(name, params)  # a bad name or parameter fails before any cell runs
    else:
        check_input(v)  # a FIFO would block the reader: refused before any work
    return v


def opt(default: Any = MISSING, check: Callable[[Any], Any] | None = None, help: str = "",
        metavar: str | None = None, cli: str = "value", identity: bool = True,
        choices: tuple[str, ...] | None = None) -> Any:
    """A spec field. ``cli``: "value" (--x V), "flag" (--x), "bool" (--x/--no-x) or "" (not
    on the command line); ``identity``: False for what does not change a result (--jobs)."""
    meta = {"check": check, "help": help, "metavar": metavar, "cli": cli,
            "identity": identity, "choices": choices}
    return field(default=default, metadata=meta)


# --- specs ----------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Spec:
    """Validated on construction; ``canonical()`` is what names a run."""
    command: ClassVar[str] = ""

    def __post_init__(self) -> None:
        label = LABEL.get()
        for f in fields(self):
            check = f.metadata.get("check")
            if check is None:
                continue
            try:  # numpy numbers as the Python numbers they are (and in messages so)
                v = check(plain(getattr(self, f.name)))
            except Bad as exc:
                raise ConfigError(f"{label(f.name)} {exc}") from None
            except ConfigError as exc:  # a validator's own message: say which option
                msg = str(exc)
                where = label(f.name)
                raise ConfigError(msg if where in msg else f"{where}: {msg}") from None
            object.__setattr__(self, f.name, v)
        self.check()

    def check(self) -> None:
        """Checks across fields (after each field's own)."""

    @classmethod
    def option_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def build(cls, values: dict, label: Callable[[str], str] | None = None):
        """A spec from a mapping of option names; an unknown name is one ConfigError."""
        known = {f.name for f in fields(cls)}
        bad = sorted(set(values) - known)
        lab = label or LABEL.get()
        if bad:
            raise ConfigError(f"{lab(bad[0])}: not an option of {cls.command or cls.__name__}"
                              f" (known: {', '.join(sorted(known))})")
        need = [f.name for f in fields(cls) if f.name not in values
                and f.default is MISSING and f.default_factory is MISSING]
        if need:
            raise ConfigError(f"{cls.command or cls.__name__} needs "
                              f"{', '.join(lab(n) for n in need)} (not given)")
        with labelled(lab):
            return cls(**values)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def canonical(self) -> dict:
        """Every field that decides the result, defaults included: one cell, one form."""
        return {"command": self.command,
                **{f.name: _plain(getattr(self, f.name)) for f in fields(self)
                   if f.metadata.get("identity", True)}}


def _plain(v):
    return list(v) if isinstance(v, tuple) else v


