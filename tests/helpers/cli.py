"""Running the command line in the test's own process."""

from __future__ import annotations

import pytest


class _Timeout(BaseException):
    """Not an Exception: the CLI's catch-all for internal errors must not turn the time
    limit into an exit 70."""


def _alarm(signum, frame):
    raise _Timeout


def main_within(args: list[str], seconds: int) -> int:
    """``stratus.app.cli.main(args)``, failing the test if it has not ended within
    ``seconds`` (every run ends: the fuzzes check it)."""
    import signal

    from stratus.app.cli import main

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        return main(args)
    except _Timeout:
        pytest.fail(f"did not end within {seconds} s: {args}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
