"""Moved to ``stratus.commitments.savings`` (issue 37): this name stays for its importers."""

from stratus.commitments.savings import *  # noqa: F403
from stratus.commitments.savings import __all__  # noqa: F401
