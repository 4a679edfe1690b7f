"""Trace loaders by format name (file -> canonical Trace)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from traces.schema import Trace


def load_canonical(path: Path) -> Trace:
    return Trace.from_parquet(path)


LOADERS: dict[str, Callable[[Path], Trace]] = {
    "canonical": load_canonical,
}
