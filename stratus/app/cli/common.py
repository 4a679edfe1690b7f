"""What every command's parser shares: one-line argparse errors, options generated from a
spec's fields (one default and one validator each, in the spec), and printing."""

from __future__ import annotations

import argparse
import json

from stratus.app import spec as S
from stratus.base.errors import StratusError


class UsageError(StratusError):
    """A command line argparse refuses."""


class Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (the usage is one ``--help`` away)."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message} (see `{self.prog} --help`)")


def add_spec(p: argparse.ArgumentParser, cls: type[S.Spec], skip: tuple[str, ...] = (),
             positional: tuple[str, ...] = (), defaults: bool = False,
             optional: tuple[str, ...] = ()) -> None:
    """``cls``'s fields as options of ``p``: ``--name-with-dashes``; argparse keeps no
    default (the spec has it), so an option not given is not in the namespace. With
    ``defaults`` the namespace gets the spec's defaults (for commands that read it).
    ``optional``: fields argparse does not require (the spec still does: a command whose
    options are two specs' requires each only in its own mode)."""
    from dataclasses import MISSING, fields

    for f in fields(cls):
        kind = f.metadata.get("cli", "value")
        if not kind or f.name in skip:
            continue
        help_ = f.metadata.get("help", "")
        if f.default is not MISSING and f.default not in (None, False, ""):
            d = ",".join(map(str, f.default)) if isinstance(f.default, tuple) else f.default
            help_ += f" (default: {d})"
        if f.metadata.get("choices"):
            help_ += f" [{'|'.join(f.metadata['choices'])}]"
        help_ = help_.replace("%", "%%")
        if f.name in positional:
            p.add_argument(f.name, help=help_)
            continue
        flag = S.cli_label(f.name)
        default = f.default if defaults and f.default is not MISSING else argparse.SUPPRESS
        if kind == "flag":
            p.add_argument(flag, dest=f.name, action="store_true", default=default,
                           help=help_)
        elif kind == "bool":
            p.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction,
                           default=default, help=help_)
        else:
            p.add_argument(flag, dest=f.name, metavar=f.metadata.get("metavar"),
                           required=f.default is MISSING and f.name not in optional,
                           default=default, help=help_)


def spec_from(args: argparse.Namespace, cls: type[S.Spec], **extra):
    """The spec of the options ``args`` holds (the rest of ``args`` is the CLI's own:
    --json, --force, output paths)."""
    names = set(cls.option_names())
    values = {k: v for k, v in vars(args).items() if k in names}
    return cls.build({**values, **extra}, S.cli_label)


def add_output_flags(p: argparse.ArgumentParser, progress: bool = False,
                     progress_help: str = "no progress bar even on a terminal") -> None:
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    if progress:
        p.add_argument("--no-progress", action="store_true", help=progress_help)


def progress_wanted(args) -> bool:
    from stratus.app.progress import ProgressBar

    return not args.no_progress and ProgressBar.wanted()


def print_doc(doc, as_json: bool, text) -> int:
    """One JSON document with ``--json``, else ``text()``."""
    print(json.dumps(doc, default=str) if as_json else text())
    return 0


def print_fields(doc: dict, as_json: bool) -> int:
    from stratus.app.report import table

    return print_doc(doc, as_json, lambda: table(("field", "value"), list(doc.items()),
                                                 align_left=2))



def inputs(*paths) -> list:
    """The files and directories a command reads (an output may never be one of them)."""
    from stratus.app.outputs import input_paths

    return input_paths(*paths)
