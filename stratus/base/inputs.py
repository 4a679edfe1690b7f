"""What a reader may open. A FIFO, a socket or a device given as an input (a trace, a
catalog, a price history, a sweep config) would block the reader forever or stream without
end, so it is refused before it is opened; a stat never blocks."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from stratus.base.errors import ConfigError


def _special(mode: int) -> str | None:
    """What a file that is neither a regular file nor a directory is, else None."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return None


def check_input(path: str | Path, what: str = "") -> None:
    """ConfigError if ``path`` is a FIFO, a socket or a device. Anything else passes
    (a missing file, a directory where a file is wanted: its reader says so in its own
    words). ``what`` prefixes the message (e.g. "--trace ")."""
    try:
        mode = os.stat(path).st_mode  # follows a symlink to what it names
    except (OSError, ValueError):
        return
    kind = _special(mode)
    if kind is not None:
        raise ConfigError(f"{what}{path}: {kind}, not a regular file; a reader would wait "
                          f"on it forever")
