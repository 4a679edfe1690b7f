"""The engine's seams, read from the code (issue 37): no ``Engine`` subclass anywhere; no
branch on a commitment (waiting gate, savings plan, reserved instances) in the engine core,
whose add-ons come through ``stratus.sim.hooks``; the live loop reads no private field of
another module's objects."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

#: the engine core: the state machine, its driver, its parts and its extension point
CORE = ("stratus/sim/core.py", "stratus/sim/engine.py", "stratus/sim/apply.py", "stratus/sim/taskbook.py",
        "stratus/sim/kernel.py", "stratus/sim/accounting.py", "stratus/sim/hooks.py",
        "stratus/sim/config.py", "stratus/sim/result.py")
#: names that mean a commitment; a branch whose test reads one is an add-on's business
#: (``WAITING`` is a task's state, waiting for its instance: not the waiting policy)
COMMITMENT = re.compile(r"(?i)waiting|gate|savings|plan\b|reserved|ran_on|exclusive|od_live")
NOT_A_COMMITMENT = {"WAITING"}
#: a class statement that may name Engine among its bases (confirmed by the AST)
CANDIDATE = re.compile(r"class\s+\w+\s*\([^)]*Engine")


def _py(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def engine_subclasses(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
                if name == "Engine":
                    out.append(node.name)
    return out


def _names(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    return out


def commitment_branches(tree: ast.AST) -> list[str]:
    """The tests of ``if``/``while``/conditional expressions/comprehension filters and
    the operands of ``and``/``or`` that read a commitment's name."""
    tests: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests.extend(node.ifs)
        elif isinstance(node, ast.BoolOp):
            tests.extend(node.values)
        elif isinstance(node, ast.Match):
            tests.append(node.subject)
    return sorted({f"line {t.lineno}: {ast.unparse(t)}" for t in tests
                   if any(COMMITMENT.search(n) for n in _names(t) - NOT_A_COMMITMENT)})


def private_reads(tree: ast.AST) -> list[str]:
    """``x._name`` where ``x`` is not ``self`` or ``cls`` (dunders aside): a private field
    of another object."""
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            out.append(f"line {node.lineno}: {ast.unparse(node)}")
    return out


def test_no_engine_subclass_anywhere():
    texts = {p: p.read_text() for p in _py("stratus", "packers", "scalers", "tests",
                                           "benchmarks")}
    found = {str(p.relative_to(ROOT)): engine_subclasses(ast.parse(text))
             for p, text in texts.items() if CANDIDATE.search(text)}  # parse only those
    assert {k: v for k, v in found.items() if v} == {}


@pytest.mark.parametrize("path", CORE)
def test_no_commitment_branch_in_the_engine_core(path):
    assert commitment_branches(ast.parse((ROOT / path).read_text())) == []


@pytest.mark.parametrize("path", [str(p.relative_to(ROOT)) for p in _py("stratus/live")])
def test_the_live_loop_reads_no_private_field_of_another_object(path):
    assert private_reads(ast.parse((ROOT / path).read_text())) == []


def book_writes(tree: ast.AST) -> list[str]:
    """Assignments to a field of a task book (``book.loc[tid] = ...``, ``m.book.state[t]
    = ...``, ``book.done[t] += ...``): the core's state, which only its transitions set."""
    out = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            base = t.value if isinstance(t, ast.Subscript) else t
            if isinstance(base, ast.Attribute) and isinstance(base.value, (ast.Name,
                                                                         ast.Attribute)):
                owner = base.value.id if isinstance(base.value, ast.Name) else base.value.attr
                if owner == "book":
                    out.append(f"line {node.lineno}: {ast.unparse(t)}")
    return out


@pytest.mark.parametrize("path", [str(p.relative_to(ROOT)) for p in _py("stratus/live")])
def test_the_live_world_sets_no_field_of_the_task_book(path):
    """The mirror drives the core through its transitions (``Core.adopt``, ``Core.ended``,
    ...), never by writing the core's state."""
    assert book_writes(ast.parse((ROOT / path).read_text())) == []


def test_the_live_mirror_does_not_import_the_replay_engine():
    tree = ast.parse((ROOT / "stratus/live/mirror.py").read_text())
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "stratus.sim.engine" not in mods and "stratus.sim.core" in mods


# the checks find what they look for (each planted where the issue found it)
def test_the_checks_find_planted_faults():
    assert engine_subclasses(ast.parse("class Mirror(Engine):\n    pass\n")) == ["Mirror"]
    assert engine_subclasses(ast.parse("class M(e.Engine):\n    pass\n")) == ["M"]
    assert CANDIDATE.search("class Mirror(Engine):") and CANDIDATE.search("class M(a, e.Engine):")
    gate = "def f(self):\n    if self.gate is not None and inst.market == RESERVED:\n        g()\n"
    assert commitment_branches(ast.parse(gate)) != []
    assert commitment_branches(ast.parse("if book.state[t] == WAITING:\n    pass\n")) == []
    assert len(commitment_branches(ast.parse("x = [t for t in a if e.ran_on]\n"))) == 1
    assert commitment_branches(ast.parse("if self.cordoned:\n    pass\n")) == []
    assert private_reads(ast.parse("m.cloud._iid.next = 3\n")) == ["line 1: m.cloud._iid"]
    assert private_reads(ast.parse("Engine._send_back(self, t)\n")) != []
    assert private_reads(ast.parse("self._x = other.__class__\n")) == []
    assert book_writes(ast.parse("book.loc[tid] = inst\nm.book.state[t] = 3\n"
                                 "book.done[t] += 1.0\nx = book.loc[t]\n")) == [
        "line 1: book.loc[tid]", "line 2: m.book.state[t]", "line 3: book.done[t]"]
