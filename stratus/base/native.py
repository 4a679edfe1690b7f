"""Which core runs: the compiled modules (built at install from ``.pyx`` sources, issue 39)
or their pure-Python references.

``STRATUS_PURE_PYTHON=1`` selects the pure modules. Without it a compiled module is used
when it is built and not older than its source; when it is missing or stale, the pure one
runs (same results, slower) and one notice on stderr per process says so. A module with a
compiled twin asks ``wanted(name)`` before importing it, and says ``loaded`` or
``unusable`` after (stratus.sim.kernel).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ENV = "STRATUS_PURE_PYTHON"

_used: dict[str, str] = {}  # compiled module -> "compiled" | "pure" | why it is not used
_told = False


def pure_requested() -> bool:
    """Whether the environment asks for the pure-Python core."""
    return os.environ.get(ENV, "").strip() not in ("", "0")


def _stale(spec) -> str | None:
    """Why the built module is older than its source, or None (a source tree: make venv
    rebuilds it; an installed wheel carries no source and is never stale)."""
    built = Path(spec.origin)
    src = built.with_name(built.name.split(".", 1)[0] + ".pyx")
    if src.exists() and src.stat().st_mtime > built.stat().st_mtime:
        return f"{built.name} is older than {src.name}"
    return None


def wanted(name: str) -> bool:
    """Whether to import the compiled module ``name`` (then ``loaded`` or ``unusable``):
    not when the pure core is asked for, nor when it is not built or stale (one notice)."""
    if pure_requested():
        _used[name] = "pure"
        return False
    spec = importlib.util.find_spec(name)
    why = "not built" if spec is None else _stale(spec)
    if why is not None:
        unusable(name, why)
        return False
    return True


def loaded(name: str) -> None:
    """The compiled module ``name`` is the one in use."""
    _used[name] = "compiled"


def unusable(name: str, why: object) -> None:
    """The compiled module ``name`` is not used (``why``): the pure one runs, and one
    notice per process says so."""
    global _told
    _used[name] = str(why)
    if _told:
        return
    _told = True
    print(f"stratus: notice: the compiled core ({name}) is {why}; running the pure-Python "
          f"core (the same results, slower). `make venv` or `pip install -e .` builds it "
          f"with a C compiler; {ENV}=1 selects the pure core and silences this.",
          file=sys.stderr)


def status() -> dict:
    """Which core each compiled module's import chose so far: ``compiled``, ``pure`` (asked
    for), or why the compiled one is not used."""
    return {"pure_requested": pure_requested(), "modules": dict(_used)}


__all__ = ["ENV", "loaded", "pure_requested", "status", "unusable", "wanted"]
