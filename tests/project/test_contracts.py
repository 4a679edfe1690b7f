"""Declared contracts, checked on the source (issue 37, item 3): no part or view is probed
with ``getattr``/``hasattr``, and no module reads another module's ``_private`` attribute.
A part that needs something of a view or of another part asks for it by a declared name
(``stratus.sim.view.ClusterView``, the protocols in ``stratus.policy.compose`` and
``stratus.sim.contracts``)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

FOLDERS = ("stratus", "packers", "scalers")

#: the registry builds parts from text and may look names up (issue 37: "outside the registry")
NOT_PROBES = {"stratus/app/registry.py"}

PRIVATE_ALLOWED: set[str] = set()
PRIVATE_ALLOWED_FOLDERS: tuple[str, ...] = ()

#: names a view or a part goes by where it is probed (``getattr(view, ...)``); the
#: scheduler (``policy`` to the applier) and the estimator are parts the core calls too
VIEW_OR_PART = {"view", "v", "part", "p", "parts", "packer", "scaler", "migrator", "choice",
                "scheduler", "sched", "policy", "estimator", "est"}

#: underscore names that are public API elsewhere (namedtuple's)
PUBLIC_UNDERSCORE = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}

#: modules whose underscore functions are documented API (``os._exit``, ``sys._getframe``)
STDLIB = {"os", "sys"}


def _modules() -> list[Path]:
    return sorted(p for f in FOLDERS for p in (ROOT / f).rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in PUBLIC_UNDERSCORE


def _receiver(node: ast.AST) -> str | None:
    """The name an expression goes by: ``view`` for ``view``, ``self.packer`` and
    ``type(view)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
        return _receiver(node.args[0])
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def probes(tree: ast.AST, rel: str) -> list[str]:
    """``hasattr(x, ...)``, ``getattr(x, name, default)`` and ``getattr(x, "literal")`` where
    ``x`` is a view or a part (in ``packers/`` and ``scalers/``, ``self`` is a part too).
    ``getattr(x, name)`` with a computed name and no default reads a declared attribute
    (a parameter by its declared name, stratus.policy.params): not a probe."""
    names = set(VIEW_OR_PART)
    if rel.startswith(("packers/", "scalers/")):
        names.add("self")
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2):
            continue
        literal = isinstance(node.args[1], ast.Constant)
        if node.func.id == "getattr" and len(node.args) == 2 and not literal:
            continue
        who = _receiver(node.args[0])
        if who in names:
            out.append(f"{rel}:{node.lineno}: {node.func.id}({ast.unparse(node.args[0])}, ...)")
    return out


def own_private_names(tree: ast.AST) -> set[str]:
    """The ``_private`` names a module defines: its functions, classes and globals, the
    attributes its classes set or declare (``self._x = ...``, ``__slots__``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add(node.asname or node.name.split(".")[-1])
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == "__slots__" and isinstance(
                        node.value, (ast.Tuple, ast.List)):
                    out.update(e.value for e in node.value.elts if isinstance(e, ast.Constant))
    return {n for n in out if _private(n)}


def _package(rel: str) -> str:
    return rel.rsplit("/", 1)[0].replace("/", ".")


def foreign_private(tree: ast.AST, rel: str) -> list[str]:
    """Reads or writes of another module's ``_private`` attribute, and imports of a
    ``_private`` name from another package (``from m import _x``; a package's modules may
    share their helpers, as ``stratus.app.figures``' with the other figure modules)."""
    own = own_private_names(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").rsplit(".", 1)[0] == _package(rel):
                continue
            for a in node.names:
                if _private(a.name):
                    out.append(f"{rel}:{node.lineno}: from {node.module} import {a.name}")
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls", *STDLIB):
                continue  # its own class's field, or the standard library's API
            if node.attr in own:
                continue  # a field of a class this module defines
            out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return out


# Parsing every module takes seconds on a busy machine: a module is parsed only if its
# text may hold what a check looks for (a superset: the AST decides).
MAY_PROBE = re.compile(r"\b[gh]asattr\(|\bgetattr\(")
MAY_REACH = re.compile(r"\b(?!self\b|cls\b)\w+[)\]]?\._(?!_)\w|[)\]]\._(?!_)\w"
                       r"|\bimport\s+\([^)]*\b_(?!_)\w|\bimport\s[^\n(]*\b_(?!_)\w")


@cache
def _parsed(which: str) -> list[tuple[str, ast.AST]]:
    may = MAY_PROBE if which == "probe" else MAY_REACH
    out = []
    for p in _modules():
        text = p.read_text(encoding="utf-8")
        if may.search(text):
            out.append((_rel(p), ast.parse(text, str(p))))
    return out


@pytest.mark.slow  # parses ~30 modules: half a second to a second on a busy machine
def test_no_part_or_view_is_probed_with_getattr():
    found = [hit for rel, tree in _parsed("probe") if rel not in NOT_PROBES for hit in probes(tree, rel)]
    assert found == [], "declare it (stratus.sim.view.ClusterView, stratus.policy.compose) instead:\n" \
        + "\n".join(found)


@pytest.mark.slow  # parses ~20 modules: about a second on a busy machine
def test_no_module_reads_another_modules_private_field():
    found = [hit for rel, tree in _parsed("reach")
             if rel not in PRIVATE_ALLOWED and not rel.startswith(PRIVATE_ALLOWED_FOLDERS)
             for hit in foreign_private(tree, rel)]
    assert found == [], "add a public accessor instead:\n" + "\n".join(found)


@pytest.mark.parametrize("code, hits", [
    ("getattr(view, 'now', 0.0)", 1), ("hasattr(self.choice, 'reset')", 1),
    ("getattr(type(part), 'PARAMS', None)", 1), ("getattr(part, name)", 0),
    ("getattr(trace, 'frame', None)", 0), ("getattr(self.scheduler, 'reset', None)", 1),
    ("hasattr(est, 'error_summary')", 1),
])
def test_the_probe_check_sees_a_probe(code, hits):
    assert len(probes(ast.parse(code), "stratus/x.py")) == hits


@pytest.mark.parametrize("code, hits", [
    ("inst._tasks", 1), ("self._tasks", 0), ("from m import _x", 1),
    ("from stratus.x2 import _y", 0), ("from stratus.app.figures import _y", 1),
    ("class A:\n    __slots__ = ('_a',)\ndef f(o):\n    return o._a", 0),
    ("def f(o):\n    o._b = 1\n    return o._b", 0), ("t._replace(a=1)", 0),
])
def test_the_private_check_sees_a_foreign_field(code, hits):
    assert len(foreign_private(ast.parse(code), "stratus/x.py")) == hits


# --- the declarations themselves -------------------------------------------------------------

def _members(cls) -> dict:
    return {n: m for n, m in vars(cls).items() if not n.startswith("_")}


def test_every_view_implements_the_cluster_view():
    """The engine's view, the policy author's ``StaticView`` and the tests' ``FakeView``
    offer every member of the protocol, with its arguments."""
    import inspect

    from stratus.sim.view import ClusterView, EngineView
    from stratus.testing import StaticView
    from tests.helpers.views import FakeView

    declared = _members(ClusterView)
    assert {"now", "savings_plan", "instance_forms", "watch_instances"} <= set(declared)
    for cls in (EngineView, StaticView, FakeView):
        view = StaticView() if cls is not EngineView else None
        for name, member in declared.items():
            have = inspect.getattr_static(cls, name, None)
            if have is None and view is not None:
                assert name in vars(view), f"{cls.__name__} lacks {name}"
                continue
            assert have is not None, f"{cls.__name__} lacks {name}"
            if inspect.isfunction(member):
                assert list(inspect.signature(member).parameters) == \
                    list(inspect.signature(have).parameters), f"{cls.__name__}.{name}"


def test_two_parts_counting_the_same_name_both_show():
    """Karpenter's consolidation and instance clearing both count ``tasks_migrated``:
    chained, each count shows under its part's key; neither overwrites the other (they
    were merged flat with ``dict.update``)."""
    from stratus.packers.binning import RuntimeBinPacker
    from stratus.packers.first_fit import FirstFit
    from stratus.policy.compose import ComposedScheduler
    from stratus.scalers.chain import MigratorChain
    from stratus.scalers.clearing import InstanceClearing
    from stratus.scalers.karpenter import KarpenterConsolidation, KarpenterProvisioner

    ff = FirstFit()
    karpenter = KarpenterConsolidation(ff)
    clearing = InstanceClearing(RuntimeBinPacker(), own_packer=True)
    karpenter.tasks_migrated, clearing.tasks_migrated = 7, 3
    s = ComposedScheduler("both", KarpenterProvisioner(), ff, MigratorChain(karpenter, clearing))
    stats = s.stats()
    assert stats["migrator.tasks_migrated"] == 7 and stats["clearing.tasks_migrated"] == 3
    assert "tasks_migrated" not in stats
    assert stats["consolidation_deleted"] == 0 and stats["instances_cleared"] == 0  # one part's
    assert s.part_stats()["clearing"] == {"instances_cleared": 0, "tasks_migrated": 3}
    assert s.migrator.stats() == {k: v for k, v in stats.items()}  # the chain says the same
