"""Calibrated synthetic workloads, by name: ``generate("google", scale=2, hours=6)`` or
``from_spec("synthetic:google?scale=2&hours=6")``.

google   Google-2011-like (Stratus §4.2)           traces/synthetic/google.py
twosigma TwoSigma-like (Stratus §4.2)              traces/synthetic/twosigma.py
mms      M/M/s job stream (waiting-policy paper §3) traces/synthetic/mms.py
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from urllib.parse import parse_qsl

from stratus.base.bounds import MAX_INSTANT_S
from stratus.base.errors import ConfigError
from stratus.traces.schema import Trace

from . import google, mms, twosigma

GENERATORS: dict[str, Callable[..., Trace]] = {
    "google": google.generate,
    "twosigma": twosigma.generate,
    "mms": mms.generate,
}
SPEC_PREFIX = "synthetic:"


def _convert(gen: str, key: str, value: object, default: object) -> object:
    """A parameter value (possibly text from a spec) as the type of its default."""
    want_int = isinstance(default, int) and not isinstance(default, bool)
    try:
        if isinstance(value, bool):
            raise ValueError
        num = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        kind = "an integer" if want_int else "a number"
        raise ConfigError(f"synthetic:{gen}: parameter {key!r} must be {kind}, "
                          f"got {value!r}") from None
    if want_int:
        if not (math.isfinite(num) and num.is_integer()):
            raise ConfigError(f"synthetic:{gen}: parameter {key!r} must be an integer, "
                              f"got {value!r}")
        return int(num)
    return num


MAX_START_S = MAX_INSTANT_S


def generate(name: str, **params: object) -> Trace:
    """The named synthetic trace; ConfigError for an unknown name, parameter or value."""
    args = checked(name, params)
    return GENERATORS[name](**args)


def checked(name: str, params: dict) -> dict:
    """``params`` converted to the generator's types; ConfigError for an unknown name,
    parameter or value (nothing is generated)."""
    if name not in GENERATORS:
        raise ConfigError(f"unknown synthetic generator {name!r}; known: "
                          f"{', '.join(sorted(GENERATORS))}")
    fn = GENERATORS[name]
    sig = inspect.signature(fn).parameters
    unknown = [k for k in params if k not in sig]
    if unknown:
        raise ConfigError(f"synthetic:{name}: unknown parameter {unknown[0]!r}; known: "
                          f"{', '.join(sig)}")
    args = {k: _convert(name, k, v, sig[k].default) for k, v in params.items()}
    start = args.get("start_s", 0.0)
    # seconds are doubles: far from 0 a task's runtime vanishes into its submit time
    if not (math.isfinite(start) and abs(start) <= MAX_START_S):
        raise ConfigError(f"synthetic:{name}: parameter 'start_s' = {start:g} s is outside "
                          f"±{MAX_START_S:g} s "
                          f"(about 3,000 years)")
    return args


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``synthetic:google?scale=2&hours=6`` -> ("google", {"scale": "2", "hours": "6"})."""
    body = spec[len(SPEC_PREFIX):] if spec.startswith(SPEC_PREFIX) else spec
    name, _, query = body.partition("?")
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ConfigError(f"{spec!r}: parameters must look like key=value&key=value") from None
    params: dict[str, str] = {}
    for k, v in pairs:
        if k in params:
            raise ConfigError(f"{spec!r}: parameter {k!r} given twice")
        params[k] = v
    return name, params


def from_spec(spec: str) -> Trace:
    name, params = parse_spec(spec)
    return generate(name, **params)
