"""How much memory a migration moves (Stratus §4.1: "migration times are computed based on
the container's memory footprint").

A spec is ``request`` (the footprint is the memory request, the only memory figure every
trace carries) or ``usage:F`` (the footprint is F of the request, F in (0, 1], for a
workload whose containers are known to use less than they ask for). The default and why:
docs/decisions.md, "Migration footprint".
"""

from __future__ import annotations

import math

from stratus.base.errors import ConfigError

OPTION = "--migration-footprint"
DEFAULT = "request"


def footprint_fraction(spec: str) -> float:
    """The share of a task's memory request a migration moves: 1 for ``request``, F for
    ``usage:F``; anything else is a one-line ConfigError naming the option."""
    text = str(spec).strip()
    if text == "request":
        return 1.0
    kind, _, frac = text.partition(":")
    try:
        f = float(frac) if kind == "usage" else math.nan
    except ValueError:
        f = math.nan
    if not 0.0 < f <= 1.0:  # NaN and inf fail here too
        raise ConfigError(f"{OPTION} takes 'request' or 'usage:F' with F in (0, 1], got {spec!r}")
    return f


def footprint_name(spec: str) -> str:
    """The canonical spelling of a valid spec (``usage:0.50`` -> ``usage:0.5``)."""
    f = footprint_fraction(spec)
    return "request" if str(spec).strip() == "request" else f"usage:{f:g}"
