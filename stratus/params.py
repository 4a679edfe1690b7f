"""Parameters of a scheduler's parts, sklearn-style: a part's parameters are the keyword
arguments of its ``__init__`` that take a number, a flag or a word, each read back from
the attribute of the same name; ``set_params`` checks a new value against the current
one's type (and the part's own ``check_params``). A composed scheduler names its parts'
parameters ``KEY.NAME``, KEY being the part's ``key`` (``clearing.threshold``), so that a
sweep can vary them (issue 21)."""

from __future__ import annotations

import inspect
import math

from stratus.base.errors import ConfigError

SCALARS = (bool, int, float, str)


def part_params(part) -> dict:
    """The parameters of one part: {name: current value}."""
    try:
        sig = inspect.signature(type(part).__init__)
    except (TypeError, ValueError):
        return {}
    out = {}
    for name, p in sig.parameters.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or \
                not hasattr(part, name):
            continue
        v = getattr(part, name)
        # a number that may be None (``bid_factor: float | None``) is a parameter too
        maybe_number = v is None and any(t in str(p.annotation) for t in ("float", "int"))
        if isinstance(v, SCALARS) or maybe_number:
            out[name] = v
    return out


def coerce(where: str, value, like):
    """``value`` (a string from a command line or TOML value) as the type of ``like``."""
    if isinstance(like, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise ConfigError(f"{where}: takes true or false, got {value!r}")
    if isinstance(like, (int, float)) or like is None:
        if isinstance(value, bool):
            raise ConfigError(f"{where}: takes a number, got {value!r}")
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: takes a number, got {value!r}") from None
        if not math.isfinite(x):
            raise ConfigError(f"{where}: takes a finite number, got {value!r}")
        if isinstance(like, int) and not isinstance(like, bool):
            if x != int(x):
                raise ConfigError(f"{where}: takes a whole number, got {value!r}")
            return int(x)
        return x
    return str(value)


def set_part_params(part, where: str, params: dict) -> None:
    known = part_params(part)
    new = {}
    for name, value in params.items():
        if name not in known:
            raise ConfigError(f"{where}.{name}: not a parameter (known: "
                              f"{', '.join(sorted(known)) or 'none'})")
        new[name] = coerce(f"{where}.{name}", value, known[name])
    check = getattr(part, "check_params", None)
    if check is not None:
        check({**known, **new}, where)
    for name, v in new.items():
        setattr(part, name, v)


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
    return v if isinstance(v, str) else repr(v)


def canonical(params: dict) -> str:
    """One text for one set of values (sorted, numbers as Python writes them), which
    ``parse`` and ``coerce`` read back as the same values."""
    return "&".join(f"{k}={text(v)}" for k, v in sorted(params.items()))
