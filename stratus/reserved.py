"""Moved to ``stratus.commitments.reserved`` (issue 37): this name stays for its importers."""

from stratus.commitments.reserved import *  # noqa: F403
from stratus.commitments.reserved import __all__  # noqa: F401
