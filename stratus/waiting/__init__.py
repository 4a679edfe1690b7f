"""Waiting policies over fixed (reserved) capacity with an on-demand overflow (paper 000):
the queueing analysis, the pool simulator, and the API of ``stratus waiting``:
``stratus.waiting.simulate(trace, reserved, policy, **options)``, ``advise``, ``analyze``
(loaded on first use)."""

from __future__ import annotations

_API = {"simulate": "simulate_waiting", "advise": "advise", "analyze": "analyze"}


def __getattr__(name: str):
    if name in _API:
        from stratus.app import api

        return getattr(api, _API[name])
    raise AttributeError(f"module 'stratus.waiting' has no attribute {name!r}")
