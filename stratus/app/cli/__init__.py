"""The ``stratus`` command. Every subcommand that produces numbers takes ``--json`` and
then prints exactly one JSON document on stdout; progress and logs go to stderr.

Each command group is a module here that maps argv to a spec (stratus.app.spec), calls the
Python API (stratus.app.api) and prints: replays (replay, compare, sensitivity, estimate),
waiting (analyze, waiting simulate, advise), batch (sweep, report), info (schedulers,
catalogs, traces), share (share), qos (qos run, qos sweep), live (live)."""

from __future__ import annotations

import argparse
import functools
import os
import sys

from stratus.app.cli import batch, info, live, qos, replays, share, waiting
from stratus.app.cli.common import Parser
from stratus.base.errors import StratusError

GROUPS = (replays, waiting, share, qos, batch, info, live)
COMMANDS = {name: cmd for g in GROUPS for name, cmd in g.COMMANDS.items()}
EXIT_USAGE, EXIT_BUG, EXIT_INTERRUPTED = 2, 70, 130


@functools.cache
def build_parser() -> argparse.ArgumentParser:
    """The whole command line, built once per process (parsing leaves it as it was; ~25 ms
    to build, which a test that calls ``main`` a thousand times pays once)."""
    ap = Parser(prog="stratus", description=" ".join(__doc__.split("\n\n")[0].split()),
                epilog="--debug anywhere on the line: show the traceback of an error")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for g in GROUPS:
        g.add_parsers(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run one command; the one error path. A user's error (a bad option, file, row,
    field; an unreadable or unwritable path; too little memory) is one line on stderr and
    exit 2; an interrupt is one line and exit 130; anything else is a bug in stratus, and
    its one line says so (exit 70). ``--debug`` adds the traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]

    def fail(code: int, line: str) -> int:
        if debug:
            import traceback

            traceback.print_exc()
        print(line, file=sys.stderr, flush=True)
        return code

    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.cmd](args)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except StratusError as exc:
        return fail(EXIT_USAGE, f"stratus: error: {exc}")
    except KeyboardInterrupt:
        return fail(EXIT_INTERRUPTED, "stratus: interrupted")
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a path the user named, unreadable or unwritable
        where = f"{exc.filename}: " if exc.filename else ""
        return fail(EXIT_USAGE, f"stratus: error: {where}{exc.strerror or exc}")
    except MemoryError:
        return fail(EXIT_USAGE, "stratus: error: out of memory; try a smaller trace, window "
                                "or scale")
    except Exception as exc:
        return fail(EXIT_BUG, f"stratus: internal error (a bug in stratus, please report it): "
                              f"{type(exc).__name__}: {exc}"
                              + ("" if debug else " (rerun with --debug for the traceback)"))


def entry() -> None:
    """The console script: ``main``, then leave without tearing the interpreter down. A
    replay leaves millions of small objects behind, and freeing them one by one at exit
    took up to 1.8 s on a real-sized day for nothing (output is flushed first)."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)


if __name__ == "__main__":
    entry()
