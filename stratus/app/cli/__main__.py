"""``python -m stratus.app.cli``: the ``stratus`` command."""

from stratus.app.cli import entry

entry()
