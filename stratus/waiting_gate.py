"""Moved to ``stratus.commitments.gate`` (issue 37): this name stays for its importers."""

from stratus.commitments.gate import *  # noqa: F403
from stratus.commitments.gate import __all__  # noqa: F401
