"""Layers, one way (docs/architecture.md): (0) the foundation every layer uses,
stratus.base (errors, reports, resources, tempnames, bounds, inputs), which imports nothing of
the project but itself (inputs raises errors' ConfigError); (1) stratus.pricing,
stratus.traces; (2) the simulation core, stratus.sim; (3) what builds on the core's seams:
the policy contracts and estimators (stratus.policy) and the commitments as add-ons
(stratus.commitments); (4) the parts, stratus.packers and stratus.scalers; (5) what puts
them together: a replay with its add-ons (stratus.replays), the other simulators
(stratus.waiting, stratus.qos, stratus.sharing, stratus.fargate), the live driver
(stratus.live) and the test kit (stratus.testing); (6) the application layer, stratus.app.
A module imports only its own layer and the ones below; no import cycle joins any two
modules, and none joins two packages (a package's modules taken together). Imports inside
functions count (they run); those under ``if TYPE_CHECKING:`` do not (they never run).
Every module of the project is in a layer: a new one must be placed here."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from stratus.app.registry import ENTRY_POINT_GROUP, get_spec, scheduler_names
from tests.helpers.paths import ROOT

#: folder -> the package it installs as (pyproject.toml's package-dir)
PACKAGES = {"stratus": "stratus", "pricing": "stratus.pricing", "traces": "stratus.traces",
            "packers": "stratus.packers", "scalers": "stratus.scalers"}
FOUNDATION = ("stratus.base", "stratus.base.errors", "stratus.base.reports",
              "stratus.base.resources", "stratus.base.tempnames", "stratus.base.bounds",
              "stratus.base.inputs", "stratus.base.native")
#: the public API's doors: packages whose ``__init__`` re-exports stratus.app.api on first
#: use (PEP 562); above every layer, and no module of the project imports them for a name
FACADES = ("stratus", "stratus.waiting", "stratus.sharing", "stratus.qos")
LAYERS = {"stratus.pricing": 1, "stratus.traces": 1, "stratus.sim": 2, "stratus.policy": 3,
          "stratus.commitments": 3, "stratus.packers": 4, "stratus.scalers": 4,
          "stratus.replays": 5, "stratus.fargate": 5, "stratus.live": 5, "stratus.waiting": 5,
          "stratus.qos": 5, "stratus.sharing": 5, "stratus.testing": 5, "stratus.app": 6}
CORE = 2  # stratus.sim
UNPLACED = 99


def layer(module: str) -> int:
    if module in FOUNDATION:
        return 0
    if module in FACADES:
        return 7
    for pkg, n in LAYERS.items():
        if module == pkg or module.startswith(pkg + "."):
            return n
    return UNPLACED


def _modules() -> dict[str, Path]:
    out = {}
    for folder, pkg in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([pkg, *parts])] = path
    return out


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _resolve(name: str) -> str | None:
    """The project module ``name`` denotes, or its closest enclosing package."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            # ``from pkg import mod`` imports the submodule pkg.mod where there is one
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                     for a in node.names]
        else:
            names = []
        if isinstance(node, ast.Call) and _is_import_module(node):
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names = [arg.value]
            else:  # a computed name: it imports the modules the file names in strings
                named = [c.value for c in ast.walk(tree) if isinstance(c, ast.Constant)
                         and isinstance(c.value, str) and c.value in MODULES]
                names = named or ["<dynamic import>"]
                if not named:
                    found.add("<dynamic import>")
        for n in names:
            target = _resolve(n)
            if target is not None and target != module:
                found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _is_import_module(node: ast.Call) -> bool:
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
        isinstance(f, ast.Name) and f.id in ("import_module", "__import__"))


GRAPH = {m: _imports(m) for m in MODULES}


def test_no_module_is_loaded_by_a_computed_name():
    """importlib with a name built at run time hides an import from this test."""
    assert sorted(m for m, ts in GRAPH.items() if "<dynamic import>" in ts) == []


def test_the_import_module_check_sees_a_string_import():
    import textwrap

    tree = ast.parse(textwrap.dedent('''
        import importlib
        def f(m):
            return importlib.import_module(f"stratus.app.{m}")
    '''))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_import_module(n)]
    assert len(calls) == 1 and not isinstance(calls[0].args[0], ast.Constant)


def test_no_module_imports_a_facade_for_a_name():
    """(A facade may hand out another: ``stratus.waiting`` from ``import stratus``.)"""
    bad = sorted((m, t) for m, ts in GRAPH.items() for t in ts
                 if t in FACADES and m not in FACADES)
    assert bad == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_the_graph_was_read():
    assert {"stratus.app.builtin", "stratus.packers.binning"} <= GRAPH["stratus.app.registry"] | \
        GRAPH["stratus.app.builtin"]
    assert "stratus.policy.compose" in GRAPH["stratus.packers.binning"]


def test_no_import_cycle():
    assert _cycles(GRAPH) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_import_goes_down_or_sideways():
    up = sorted(f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
                for m, targets in GRAPH.items() for t in targets if layer(t) > layer(m))
    assert up == []


def test_the_foundation_imports_nothing_of_the_project_but_itself():
    assert {m: GRAPH[m] - set(FOUNDATION) for m in FOUNDATION} == {m: set() for m in FOUNDATION}
    assert GRAPH["stratus.base.errors"] == set()  # the bottom of it all


#: the packages of the layout, each with its subpackages; any other stratus.* is the core
UNITS = ("stratus.base", "stratus.pricing", "stratus.traces", "stratus.sim", "stratus.policy",
         "stratus.commitments", "stratus.packers", "stratus.scalers", "stratus.app",
         "stratus.waiting", "stratus.sharing", "stratus.qos", "stratus.live")


def package_of(module: str) -> str:
    for unit in UNITS:
        if module == unit or module.startswith(unit + "."):
            return unit
    return "stratus"


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Packages and the packages their modules import (within a package not counted; a
    facade's lazy doors are above every layer and not counted either)."""
    out: dict[str, set[str]] = {}
    for m, targets in graph.items():
        p = package_of(m)
        out.setdefault(p, set())
        if m in FACADES:
            continue
        out[p].update(package_of(t) for t in targets if package_of(t) != p)
    return out


def test_no_package_level_cycle():
    """stratus -> traces -> stratus was one while the foundation sat in stratus/ itself."""
    assert _cycles(package_graph(GRAPH)) == []


def test_a_planted_package_level_cycle_is_found(monkeypatch):
    g = {m: set(ts) for m, ts in GRAPH.items()}
    # the foundation's old place: a core module that traces imports, importing traces back
    g["stratus.traces.schema"].add("stratus.sim.engine")
    cycles = _cycles(package_graph(g))
    assert any({"stratus.sim", "stratus.traces"} <= set(c) for c in cycles), cycles


def test_a_planted_import_module_of_a_project_module_is_an_edge(tmp_path, monkeypatch):
    """``importlib.import_module("stratus.app.api")`` in a core module is an import that
    goes up: the layers check sees it."""
    f = tmp_path / "planted.py"
    f.write_text("import importlib\n\ndef f():\n"
                 "    return importlib.import_module('stratus.app.api')\n")
    monkeypatch.setitem(MODULES, "stratus.sim.planted", f)
    found = _imports("stratus.sim.planted")
    assert found == {"stratus.app.api"}
    assert layer("stratus.app.api") > layer("stratus.sim.planted")


def test_every_module_is_in_a_layer():
    assert sorted(m for m in GRAPH if layer(m) == UNPLACED) == []


def test_the_core_imports_nothing_above_base_pricing_and_traces():
    """The simulation core (stratus.sim) knows no policy, commitment or application: they
    reach it through its seams (issue 37)."""
    core = [m for m in GRAPH if layer(m) == CORE]
    assert len(core) > 15
    below = ("stratus.base", "stratus.pricing", "stratus.traces", "stratus.sim")
    bad = sorted((m, t) for m in core for t in GRAPH[m]
                 if not any(t == b or t.startswith(b + ".") for b in below))
    assert bad == []


def test_a_planted_upward_import_of_the_core_is_found(monkeypatch, tmp_path):
    f = tmp_path / "planted.py"
    f.write_text("from stratus.commitments.addons import addons_for\n")
    monkeypatch.setitem(MODULES, "stratus.sim.planted", f)
    found = _imports("stratus.sim.planted")
    assert found == {"stratus.commitments.addons"}
    assert layer("stratus.commitments.addons") > layer("stratus.sim.planted") == CORE


def test_every_package_folder_is_installed():
    """pyproject.toml names every package: a wheel holds only the packages it lists."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {m for m, path in MODULES.items() if path.name == "__init__.py"}
    assert found - listed == set()


@pytest.mark.parametrize("name", scheduler_names())
def test_every_registered_scheduler_is_built_from_modules_in_their_layer(name):
    """The parts of every registered composition are parts (layer 4), policy objects or
    core objects, and the module that composes them is in the application layer (or a
    plug-in)."""
    spec = get_spec(name)
    home = spec.factory.__module__
    assert home not in MODULES or layer(home) == 6, home
    sched = spec.factory()
    for part in (getattr(sched, k, None) for k in ("packer", "scaler", "migrator")):
        if part is None:
            continue
        mod = type(part).__module__
        assert mod in MODULES and layer(mod) in (2, 3, 4), f"{name}: {mod}"
        assert not any(layer(t) > 4 for t in GRAPH[mod])


def test_a_plugin_registers_through_the_entry_point_group(monkeypatch, tmp_path):
    import sys
    from importlib.metadata import EntryPoint

    from stratus.app import registry, schedulers

    (tmp_path / "my_sched.py").write_text(
        "from stratus.app.schedulers import register\n"
        "from stratus.policy.compose import ComposedScheduler\n"
        "from stratus.scalers.task_per_instance import CheapestPerTask\n"
        "@register('mine', 'a plug-in')\n"
        "def mine():\n"
        "    return ComposedScheduler('mine', scaler=CheapestPerTask())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ep = EntryPoint("mine", "my_sched", ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(schedulers, "SCHEDULERS", dict(schedulers.SCHEDULERS))
    monkeypatch.setattr(registry, "SCHEDULERS", schedulers.SCHEDULERS)
    # builtin registered already: loading again must not re-register it
    monkeypatch.setitem(sys.modules, "stratus.app.builtin",
                        importlib.import_module("stratus.app.builtin"))
    assert "mine" in registry.scheduler_names()
    assert registry.make_scheduler("mine").name == "mine"
    sys.modules.pop("my_sched", None)


def test_a_broken_plugin_is_one_clear_error(monkeypatch):
    from importlib.metadata import EntryPoint

    from stratus.app import registry
    from stratus.base.errors import ConfigError

    ep = EntryPoint("broken", "no_such_module_xyz", ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    monkeypatch.setattr(registry, "_loaded", False)
    with pytest.raises(ConfigError, match="plug-in 'broken'.*ModuleNotFoundError"):
        registry.scheduler_names()
