"""Where the suite's files are, the same from a test module at any depth under tests/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent  # the repository
FIXTURES = TESTS / "fixtures"  # small hand-made inputs, each folder with its README
DATA = TESTS / "data"  # the bundled real logs (tests/data/README)
