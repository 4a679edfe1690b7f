"""Temporary names for outputs that are written and then renamed into place: hidden, next
to the output (same file system, so the rename is atomic), keeping its suffix (matplotlib
and pandas take the format from it), and naming this host and process plus a random token.
The token makes the name fresh, so what a writer later removes under it is its own; the
host and process let a later run prove such a file abandoned (``abandoned``)."""

from __future__ import annotations

import os
import re
import secrets
import socket
from pathlib import Path

PATTERN = re.compile(r"^\.(?P<stem>.+)\.(?P<host>[^.]+)\.(?P<pid>\d+)-[0-9a-f]{8}"
                     r"\.(?P<tag>[a-z]+)(?P<suffix>\.[^.]+)?$")


def host() -> str:
    """This machine's short name, as temporary names and sweep claims carry it."""
    return socket.gethostname().split(".")[0].replace("/", "_").replace("-", "_") or "host"


def fresh(out: Path, tag: str = "tmp") -> Path:
    """A name next to ``out`` that nothing holds yet."""
    out = Path(out)
    while True:
        p = out.with_name(f".{out.stem}.{host()}.{os.getpid()}-{secrets.token_hex(4)}"
                          f".{tag}{out.suffix}")
        if not (p.exists() or p.is_symlink()):
            return p


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def abandoned(name: str) -> bool:
    """Whether ``name`` is a temporary name (``fresh``) of a process of this host that is
    gone; anything else (a user's dot-file, a live run's file, another host's) is not."""
    m = PATTERN.match(name)
    return bool(m and m["host"] == host() and int(m["pid"]) != os.getpid()
                and not pid_alive(int(m["pid"])))
