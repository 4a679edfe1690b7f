"""Shared cloud clusters (paper 004): provisioning policies over the reserved-pool engine,
socialist and capitalist chargeback, user defection and flying solo. The API of ``stratus
share``: ``stratus.sharing.simulate(trace, reserved, **options)``, ``sweep``, ``defect``,
``solo`` (loaded on first use)."""

from __future__ import annotations

_API = ("simulate", "sweep", "defect", "solo")


def __getattr__(name: str):
    if name in _API:
        from stratus.app import api_share

        return getattr(api_share, name)
    raise AttributeError(f"module 'stratus.sharing' has no attribute {name!r}")
