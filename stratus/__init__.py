"""Stratus: cost-aware scheduling of batch jobs on cloud virtual clusters.

The Python API (every function's keyword arguments are its command's options)::

    import stratus
    trace = stratus.load_trace("tests/data/google2011-excerpt", format="google2011")
    cmp = stratus.compare(trace, schedulers=["stratus", "hotspot"], seed=1)
    cmp.table, cmp.plot()

Names are loaded on first use, so ``import stratus.sim.engine`` stays as light as it was.
"""

from __future__ import annotations

import os as _os

# In a checkout the layout's folders (packers/, scalers/, pricing/, traces/) sit beside
# stratus/ and are its subpackages stratus.packers, ...; an installed wheel holds them
# inside stratus/ (pyproject.toml's package-dir). Only the checkout's root is added, and
# only when it has that layout.
_here = _os.path.dirname(__file__)
_root = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "packers")) and all(
        _os.path.isfile(_os.path.join(_root, d, "__init__.py"))
        for d in ("packers", "scalers", "pricing", "traces")):
    __path__.append(_root)  # noqa: F821 (a package's own __path__)

__all__ = ["load_trace", "synthetic", "load_catalog", "catalog", "catalogs", "schedulers",
           "trace_formats", "replay", "compare", "sensitivity", "estimate", "analyze",
           "advise", "advise_commit", "sweep", "report", "convert", "describe", "Comparison",
           "run_live"]


def __getattr__(name: str):
    if name == "waiting":  # ``import stratus`` then ``stratus.waiting.simulate(...)``
        import stratus.waiting as waiting

        return waiting
    if name == "sharing":
        import stratus.sharing as sharing

        return sharing
    if name == "qos":  # and ``stratus.qos.run(...)``
        import stratus.qos as qos

        return qos
    if name in __all__:
        from stratus.app import api

        return getattr(api, name)
    raise AttributeError(f"module 'stratus' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
