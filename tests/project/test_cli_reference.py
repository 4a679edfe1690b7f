"""docs/reference/cli.md against the real parsers: every usage line and example parses,
every option a section names exists in the commands it is about, and the options the
trace-window table lists are accepted by every command it says takes them (it said
``traces describe --trace``, which takes its trace as its argument)."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from stratus.app.cli import build_parser
from tests.helpers.paths import ROOT

DOC = ROOT / "docs" / "reference" / "cli.md"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
#: the commands each section is about (its heading, lower case)
SECTIONS = {
    "replay, compare, sensitivity": ["replay", "compare", "sensitivity"],
    "estimate": ["estimate"],
    "catalogs": ["catalogs", "catalogs show"],
    "traces": ["traces convert", "traces describe", "traces formats"],
    "sweep and report": ["sweep", "report"],
}


def _sub(p: argparse.ArgumentParser) -> dict:
    acts = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return acts[0].choices if acts else {}


def parser(command: str) -> argparse.ArgumentParser:
    p = build_parser()
    for word in command.split():
        p = _sub(p)[word]
    return p


def flags(command: str) -> set[str]:
    return {s for a in parser(command)._actions for s in a.option_strings}


def every_command(p=None, prefix: str = "") -> list[str]:
    out = []
    for name, sub in _sub(p or build_parser()).items():
        out.append(f"{prefix}{name}")
        out += every_command(sub, f"{prefix}{name} ")
    return out


def sections() -> dict[str, str]:
    parts = re.split(r"(?m)^## ", DOC.read_text(encoding="utf-8"))
    return {p.split("\n", 1)[0].strip().lower(): p for p in parts[1:]}


def usage_lines() -> list[str]:
    """Code-block lines and inline code that start with ``stratus ``, comments cut."""
    text = DOC.read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"(?ms)^```sh\n(.*?)^```", text):
        out += [line.split("  #")[0].strip() for line in block.splitlines()
                if line.startswith("stratus ")]
    for span in re.findall(r"`([^`]+)`", re.sub(r"(?ms)^```.*?^```", "", text)):
        span = " ".join(span.split())
        if span.startswith("stratus ") and "<" not in span:
            out.append(span)
    return out


@pytest.mark.parametrize("line", usage_lines())
def test_each_usage_line_parses(line):
    words = shlex.split(re.sub(r"\[[^\]]*\]", " ", line))[1:]  # [optional parts] aside
    args = build_parser().parse_args(words)  # a UsageError names what is wrong
    command = " ".join(w for w in words[:2] if not w.startswith("-") and w in
                       [c.split()[-1] for c in every_command()])
    for flag in FLAG.findall(" ".join(re.findall(r"\[([^\]]*)\]", line))):
        assert flag in flags(command), f"{line}: {command} has no {flag}"
    assert args.cmd


@pytest.mark.parametrize("heading", sorted(SECTIONS))
def test_each_option_a_section_names_exists(heading):
    text = sections()[heading]
    have = set().union(*(flags(c) for c in SECTIONS[heading]))
    missing = sorted(set(FLAG.findall(text)) - have)
    assert not missing, f"## {heading}: {', '.join(SECTIONS[heading])} take no {missing}"


def test_the_window_options_are_taken_by_every_command_said_to_take_them():
    text = sections()["the trace and its window"]
    said = re.search(r"Every command that reads a trace \(([^)]*)\)", text).group(1)
    names = re.findall(r"`([^`]+)`", said)
    commands = []
    for n in names:
        if n.endswith(" ..."):
            commands += [c for c in every_command() if c.startswith(n[:-4] + " ")]
        else:
            commands.append(n)
    assert "replay" in commands and len(commands) >= 10
    table = [line for line in text.splitlines() if line.startswith("| `--")]
    wanted = {f for line in table for f in FLAG.findall(line.split("|")[1])}
    for c in commands:
        missing = sorted(wanted - flags(c))
        assert not missing, f"`{c}` takes no {missing}, yet cli.md says it takes them"


def test_every_option_the_page_names_exists_somewhere():
    have = set().union(*(flags(c) for c in every_command())) | {"--debug"}  # main's own
    missing = sorted(set(FLAG.findall(DOC.read_text(encoding="utf-8"))) - have)
    assert not missing, missing
