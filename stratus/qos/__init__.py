"""Deadline admission control (paper 001: QoPS, VQoPS, DVQoPS).

The API of ``stratus qos`` (loaded on first use): ``stratus.qos.run(trace,
scheme="vqops", **options)`` and ``stratus.qos.sweep(trace, **options)``."""

from __future__ import annotations

import sys
import types

_API = {"run": "run", "sweep": "sweep"}


def __getattr__(name: str):
    if name in _API:
        from stratus.app import api_qos

        return getattr(api_qos, _API[name])
    raise AttributeError(f"module 'stratus.qos' has no attribute {name!r}")


class _Facade(types.ModuleType):
    """``stratus.qos.run`` is the API's function, although ``stratus/qos/run.py`` is a
    module of the simulator: importing that submodule would set the package's ``run`` to
    it, so the package keeps no submodule under an API name (the submodule stays
    importable by its full name, ``from stratus.qos.run import simulate``)."""

    def __setattr__(self, name: str, value) -> None:
        if name in _API and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Facade
