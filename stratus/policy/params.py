"""Parameters of a scheduler's parts, sklearn-style. A part declares its parameters in
``PARAMS``, a tuple of ``Param`` (name, type, range or choices, whether None is a value),
each the keyword argument of its ``__init__`` of that name, read back from the attribute of
that name. ``Param.check`` is the one place a value is checked: a part checks its values at
construction (``Parametric.check_init``), and ``set_params`` checks a new one before it
is set, so a bad value is a ``ConfigError`` naming it before any work. A composed
scheduler names its parts' parameters ``KEY.NAME``, KEY being the part's ``key``
(``clearing.threshold``), so that a sweep can vary them (issue 21). A part's name derives
from its parameters (``Parametric.name``). A part that declares nothing (a plug-in's) has
the parameters its signature shows: keyword arguments whose value is a number, a flag or a
word (issue 35)."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from functools import cache
from typing import Protocol, runtime_checkable

from stratus.base.errors import ConfigError

SCALARS = (bool, int, float, str)


def _num(x: float) -> str:
    """A bound as a message writes it: 0, 1, 1e-06."""
    return f"{x:g}"


@dataclass(frozen=True)
class Param:
    """One parameter of a part: its name, its type (bool, int, float or str) and the
    values it takes: ``choices`` (each with a word in ``labels``, e.g. a dimension's
    name), or a number between ``low`` and ``high`` (``*_open``: the bound itself
    excluded); ``none``: None is a value too, written ``none``. ``what`` says in words
    what a value is ("a utilization", "seconds")."""

    name: str
    kind: type = float
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple = ()
    labels: tuple[str, ...] = ()
    none: bool = False
    what: str = ""

    def takes(self) -> str:
        """What it takes, in words: ``a utilization in (0, 1]``, ``0 (cpu) or 1 (memory)``."""
        if self.choices:
            words = [text(c) + (f" ({self.labels[i]})" if self.labels else "")
                     for i, c in enumerate(self.choices)]
        elif self.kind is bool:
            words = ["true", "false"]
        elif self.kind in (int, float):
            what = self.what or ("a whole number" if self.kind is int else "a number")
            lo, hi = self.low, self.high
            if lo is not None and hi is not None:
                what += (f" in {'(' if self.low_open else '['}{_num(lo)}, {_num(hi)}"
                         f"{')' if self.high_open else ']'}")
            elif lo is not None:
                what += f" {'>' if self.low_open else '>='} {_num(lo)}"
            elif hi is not None:
                what += f" {'<' if self.high_open else '<='} {_num(hi)}"
            words = [what]
        else:
            words = [self.what or "a word"]
        if self.none:
            words.append("none")
        return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]

    def check(self, value, where: str):
        """``value`` (text from a name or a TOML file, or typed) as this parameter's type,
        in its range; a ConfigError naming ``where`` (``stratus: clearing.threshold``)
        otherwise."""
        refused = ConfigError(f"{where}: takes {self.takes()}, got "
                              f"{'none' if value is None else repr(value)}")
        word = value.strip().lower() if isinstance(value, str) else None
        if value is None or word == "none":
            if self.none:
                return None
            raise refused
        if self.kind is bool:
            v = coerce(where, value, False)
        elif self.kind in (int, float):
            try:
                v = _number(where, value, self.kind)
            except ConfigError:
                if self.choices:  # what it takes says more than "a number"
                    raise refused from None
                raise
        else:
            v = value.strip() if isinstance(value, str) else value
            if not isinstance(v, str):
                raise refused
        if self.choices:
            if v not in self.choices:
                raise refused
        elif self.kind in (int, float) and not self._within(v):
            raise refused
        return v

    def _within(self, v: float) -> bool:
        lo, hi = self.low, self.high
        if lo is not None and (v <= lo if self.low_open else v < lo):
            return False
        return not (hi is not None and (v >= hi if self.high_open else v > hi))


def _number(where: str, value, kind: type):
    """``value`` as an int (exact, a whole float too) or a finite float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"{where}: takes a number, got {value!r}")
    if kind is int and isinstance(value, str):
        try:
            return int(value.strip())  # exact, however long
        except ValueError:
            pass
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{where}: takes a number, got {value!r}") from None
    if not math.isfinite(x):
        raise ConfigError(f"{where}: takes a finite number, got {value!r}")
    if kind is int:
        if isinstance(value, int):
            return value
        if x != int(x):
            raise ConfigError(f"{where}: takes a whole number, got {value!r}")
        return int(x)
    return x


@cache
def defaults(cls: type) -> dict:
    """The defaults of ``cls.__init__``'s keyword arguments."""
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return {}
    return {n: p.default for n, p in sig.parameters.items() if p.default is not p.empty}


def _inferred(part) -> tuple[Param, ...]:
    """The parameters of a part that declares none: the keyword arguments of its
    ``__init__`` whose attribute of that name is a flag, a number or a word (or None where
    the annotation says a number), typed as that value (or annotation) is."""
    try:
        sig = inspect.signature(type(part).__init__)
    except (TypeError, ValueError):
        return ()
    out = []
    for name, p in sig.parameters.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        try:  # read back from the attribute of that name, as sklearn's get_params
            v = getattr(part, name)
        except AttributeError:  # an argument it does not keep: not a parameter
            continue
        ann = str(p.annotation)
        if v is None and ("float" in ann or "int" in ann):
            out.append(Param(name, float if "float" in ann else int, none=True))
        elif isinstance(v, SCALARS):
            kind = bool if isinstance(v, bool) else type(v)
            out.append(Param(name, kind, none="None" in ann))
    return tuple(out)


def declared(part) -> dict[str, Param]:
    """The parameters of one part by name: its ``PARAMS``, else those its signature
    shows."""
    params = part.PARAMS if isinstance(part, Declares) else _inferred(part)
    return {p.name: p for p in params}


def part_params(part) -> dict:
    """The parameters of one part: {name: current value}."""
    return {n: getattr(part, n) for n in declared(part)}


def set_part_params(part, where: str, params: dict) -> None:
    """Set ``params`` (values as text or typed) of ``part``, each checked first; ``where``
    names the part in a message (``stratus: clearing``). A part may add
    ``check_params(values, where)`` for what no one parameter says."""
    known = declared(part)
    new = {}
    for name, value in params.items():
        p = known.get(name)
        if p is None:
            raise ConfigError(f"{where}.{name}: not a parameter (known: "
                              f"{', '.join(sorted(known)) or 'none'})")
        new[name] = p.check(value, f"{where}.{name}")
    if isinstance(part, ChecksParams):
        part.check_params({**part_params(part), **new}, where)
    for name, v in new.items():
        setattr(part, name, v)


@runtime_checkable
class Declares(Protocol):
    """A part that declares its parameters (``Parametric`` does)."""

    PARAMS: tuple[Param, ...]


@runtime_checkable
class ChecksParams(Protocol):
    """A part that checks its values together, for what no one parameter says."""

    def check_params(self, values: dict, where: str) -> None:
        """Raise a ConfigError naming ``where`` if ``values`` do not go together."""


class Parametric:
    """A part with declared parameters (``PARAMS``). Its ``__init__`` sets them, then
    calls ``check_init``, which checks and types them (``CheapestPerTask(bid_factor=0)``
    is a ConfigError, not a later crash). Its ``name`` is its ``label``, then the
    parameters not at their default (``instance-clearing(threshold=0.4)``); a part with a
    word for a value says it its own way (``binpack-memory``)."""

    PARAMS: tuple[Param, ...] = ()
    label = "part"

    def check_init(self) -> None:
        for p in self.PARAMS:
            setattr(self, p.name, p.check(getattr(self, p.name), f"{self.label}: {p.name}"))

    def changed(self) -> dict:
        """The parameters whose value is not ``__init__``'s default."""
        d = defaults(type(self))
        return {p.name: getattr(self, p.name) for p in self.PARAMS
                if getattr(self, p.name) != d.get(p.name, getattr(self, p.name))}

    @property
    def name(self) -> str:
        differ = self.changed()
        if not differ:
            return self.label
        return f"{self.label}({', '.join(f'{k}={text(v)}' for k, v in differ.items())})"


def coerce(where: str, value, like):
    """``value`` (a string from a command line or TOML value) as the type of ``like`` (a
    factory's option: a flag, a number or a word)."""
    if isinstance(like, bool):
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        if word in ("true", "1", "yes", "on"):
            return True
        if word in ("false", "0", "no", "off"):
            return False
        raise ConfigError(f"{where}: takes true or false, got {value!r}")
    if isinstance(like, (int, float)):
        return _number(where, value, int if isinstance(like, int) else float)
    return str(value)


def parse(text: str, where: str) -> dict[str, str]:
    """``KEY.NAME=VALUE&KEY.NAME=VALUE`` (as a trace spec's options) as {KEY.NAME: VALUE}."""
    out: dict[str, str] = {}
    for item in filter(None, (x.strip() for x in text.split("&"))):
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or not name or not value.strip():
            raise ConfigError(f"{where}: parameters are KEY.NAME=VALUE joined by '&', got "
                              f"{item!r}")
        if name in out:
            raise ConfigError(f"{where}: {name} given twice")
        out[name] = value.strip()
    return out


def text(v) -> str:
    """A value as a name writes it: true/false, a number as Python writes it, a word as is."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "none"
    return v if isinstance(v, str) else repr(v)


def canonical(params: dict) -> str:
    """One text for one set of values (sorted, numbers as Python writes them), which
    ``parse`` and ``coerce`` read back as the same values."""
    return "&".join(f"{k}={text(v)}" for k, v in sorted(params.items()))
