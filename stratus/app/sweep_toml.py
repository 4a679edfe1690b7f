"""A sweep config given as a Python dict (``stratus.sweep({...})``) written as TOML text, so
that it is read, checked and kept beside its rows exactly as a config file would be: what
TOML cannot hold (None, an object) is refused here, naming its key, and a tuple becomes the
list a TOML array reads as."""

from __future__ import annotations

import datetime as dt
import json
import math
import numbers
import os
import re

from stratus.base.errors import ConfigError

#: what a dict config is called in messages (a file config: its path)
NAME = "sweep config (dict)"
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def dumps(cfg) -> str:
    """``cfg`` as TOML text, one top-level key a line (tables and arrays inline)."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"{NAME}: a sweep config is a dict of its TOML keys, got "
                          f"{type(cfg).__name__}")
    return "".join(f"{_key(k, '')} = {_value(v, _where('', k))}\n" for k, v in cfg.items())


def _where(prefix: str, key) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def _key(k, prefix: str) -> str:
    if not isinstance(k, str):
        raise ConfigError(f"{NAME}: {_where(prefix, k)}: a key is a string, got {k!r}")
    return k if _BARE.fullmatch(k) else _string(k)


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, and TOML escapes DEL too."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(v, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        x = float(v)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return repr(x)  # the shortest text that reads back as this float ("1.0", "1e+20")
    if isinstance(v, (str, os.PathLike)):
        return _string(os.fspath(v))
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x, f"{where}[{i}]") for i, x in enumerate(v)) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k, where)} = {_value(x, _where(where, k))}"
                               for k, x in v.items()) + "}"
    raise ConfigError(f"{NAME}: {where}: {v!r} has no TOML form (a string, number, "
                      f"boolean, date, list or table)")
