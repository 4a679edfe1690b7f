"""docs/architecture.md names only what exists: every file or folder it names, every
`stratus.*` module (and the name it points into), every linked page, in its marked
components table every call of a component's module, and in its marked event table exactly
the replay's event kinds, in their order at equal times (read from the module the table
names). The document is read, not imported: a module that moves fails here until the
document names its new place."""

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
#: the folders installed under ``stratus.`` (pyproject's package-dir), the rest is stratus/
TOP = {"packers", "scalers", "pricing", "traces"}
#: where a bare file name (``engine.py``) may live
CODE_DIRS = ("stratus", "packers", "scalers", "pricing", "traces", "tests", "benchmarks")

KINDS_BLOCK = re.compile(r"<!-- event-kinds: (\S+) -->\n(.*?)<!-- /event-kinds -->", re.S)


def _ticked(text: str) -> list[str]:
    """Backticked tokens, paths written without backticks (``tests/core/x.py``), and the
    file names in the drawing."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)  # the drawing and code samples aside
    dirs = "|".join(CODE_DIRS)
    bare = re.findall(rf"(?<![\w/`.])((?:{dirs})/[\w/.\-]*\w)",
                      re.sub(r"`[^`\n]*`|\]\([^)]*\)", "", prose))
    drawn = re.findall(r"\b\w+\.py\b", "".join(re.findall(r"```.*?```", text, flags=re.S)))
    return re.findall(r"`([^`\n]+)`", prose) + bare + drawn


def missing_paths(text: str) -> list[str]:
    """Backticked files and folders (``stratus/x.py``, ``tests/core/``, ``engine.py``) absent."""
    missing = []
    for tok in (t.split("::")[0].rstrip(",.;:") for t in _ticked(text)):
        if " " in tok or "*" in tok or tok.startswith(("-", "$", "http")):
            continue
        if (ROOT / tok).exists():
            continue
        if "/" in tok:
            if re.fullmatch(r"[\w.\-/]+", tok) and not (ROOT / tok).exists():
                missing.append(tok)
        elif re.fullmatch(r"\w+\.(py|toml|md)", tok) and not any(
                next((ROOT / d).rglob(tok), None) for d in CODE_DIRS):
            missing.append(tok)
    return missing


def _module_file(parts: list[str]) -> tuple[Path | None, list[str]]:
    """The longest prefix of ``stratus.a.b...`` that is a module or package, and the rest."""
    for n in range(len(parts), 0, -1):
        head = parts[1:n]
        path = ROOT / head[0] / Path(*head[1:]) if head and head[0] in TOP \
            else ROOT / "stratus" / Path(*head)
        for cand in (path.with_suffix(".py") if head else None, path / "__init__.py"):
            if cand is not None and cand.exists():
                return cand, parts[n:]
    return None, parts[1:]


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in _parsed(path).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if any(getattr(t, "id", "") == "__all__" for t in targets):  # a facade's lazy names
                names |= {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def missing_modules(text: str) -> list[str]:
    """Backticked ``stratus.a.b[.Name]`` whose module, or the name it points into, is absent."""
    missing = []
    for tok in _ticked(text):
        m = re.fullmatch(r"(stratus(?:\.\w+)+)(\(.*\))?", tok)
        if not m:
            continue
        path, rest = _module_file(m.group(1).split("."))
        if path is None or (rest and rest[0] not in _top_level_names(path)):
            missing.append(tok)
    return missing


def missing_links(text: str) -> list[str]:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", re.sub(r"```.*?```", "", text, flags=re.S))
    return [t for t in links if not t.startswith("http") and not (DOC.parent / t).exists()]


def missing_methods(text: str) -> list[str]:
    """In the marked components table, each row's calls (last column) that no class of the
    row's module defines (the old ``Cloud.request_failed``)."""
    missing = []
    for block in re.findall(r"<!-- components -->\n(.*?)<!-- /components -->", text, re.S):
        for row in block.splitlines()[2:]:
            cells = row.strip().strip("|").split(" | ")
            path = next((t for t in re.findall(r"`([^`]+)`", cells[0]) if "/" in t), None)
            if path is None or not (ROOT / path).is_file():
                missing.append(f"{cells[0]}: no module")
                continue
            tree = _parsed(ROOT / path)
            defined = {f.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                       for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
            defined |= {c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef)}
            for call in re.findall(r"`(\w+)(?:\([^`]*\))?`", cells[-1]):
                if call not in defined:
                    missing.append(f"{path}: {call}")
    return missing


def kinds_in_code(path: Path) -> list[str]:
    """``EV_*`` names bound in the events module, in their numeric (processing) order."""
    found: list[tuple[int, str]] = []
    for node in ast.parse(path.read_text()).body:
        if not isinstance(node, ast.Assign):
            continue
        if isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "range":
            elts = [e for t in node.targets for e in getattr(t, "elts", [t])]
            start = node.value.args[0].value if len(node.value.args) > 1 else 0
            found += [(start + i, e.id) for i, e in enumerate(elts)
                      if isinstance(e, ast.Name) and e.id.startswith("EV_")]
        elif isinstance(node.value, ast.Constant) and isinstance(node.value.value, int):
            found += [(node.value.value, t.id) for t in node.targets
                      if isinstance(t, ast.Name) and t.id.startswith("EV_")]
    return [name for _, name in sorted(found)]


def kinds_table(text: str) -> tuple[str, list[str]]:
    blocks = KINDS_BLOCK.findall(text)
    assert len(blocks) == 1, "docs/architecture.md: one <!-- event-kinds: PATH --> table expected"
    path, table = blocks[0]
    return path, [m.group(1) for m in re.finditer(r"^\|\s*`(EV_\w+)`", table, re.M)]


TEXT = DOC.read_text()


def test_named_files_and_folders_exist():
    assert not missing_paths(TEXT), f"architecture.md names files that do not exist: {missing_paths(TEXT)}"


def test_named_modules_and_their_names_exist():
    bad = missing_modules(TEXT)
    assert not bad, f"architecture.md names modules or names that do not exist: {bad}"


def test_components_calls_exist():
    assert "<!-- components -->" in TEXT, "architecture.md: the components table is not marked"
    bad = missing_methods(TEXT)
    assert not bad, f"architecture.md's components table names calls that do not exist: {bad}"


def test_linked_pages_exist():
    assert not missing_links(TEXT), f"architecture.md links missing pages: {missing_links(TEXT)}"


def test_event_kinds_table_is_the_code_s():
    path, doc_kinds = kinds_table(TEXT)
    assert (ROOT / path).is_file(), f"the event-kinds table names {path}, which does not exist"
    code_kinds = kinds_in_code(ROOT / path)
    assert code_kinds, f"no EV_* kinds found in {path}"
    assert doc_kinds == code_kinds, (f"architecture.md lists the event kinds {doc_kinds}; "
                                     f"{path} has {code_kinds}, in processing order")


def test_a_stale_document_fails():
    """What the issue found in the old document is caught: an old test path, a method that is
    gone, a kind that is no event, kinds out of order, a module that moved."""
    path, kinds = kinds_table(TEXT)
    assert missing_paths("`tests/test_kernel.py` and `stratus/sim/no_such.py`") == [
        "tests/test_kernel.py", "stratus/sim/no_such.py"]
    assert missing_paths("its tests (tests/test_components.py)") == ["tests/test_components.py"]
    assert missing_paths("```\n│ Gate (no_such_gate.py) │\n```") == ["no_such_gate.py"]
    assert missing_modules("`stratus.sim.cloud.request_failed`, `stratus.no_such`") == [
        "stratus.sim.cloud.request_failed", "stratus.no_such"]
    assert missing_modules("`stratus.packers.binning.BinIndex`, `stratus.policy.compose.Plan`") == []
    assert missing_links("[x](no-such-page.md)") == ["no-such-page.md"]
    table = "<!-- components -->\n| a | b | c |\n| - | - | - |\n| `Cloud` (`stratus/sim/cloud.py`) | x | `request`, `request_failed` |\n<!-- /components -->"
    assert missing_methods(table) == ["stratus/sim/cloud.py: request_failed"]

    def table(names):
        rows = "".join(f"| `{k}` | x |\n" for k in names)
        return f"<!-- event-kinds: {path} -->\n| kind | x |\n| --- | --- |\n{rows}<!-- /event-kinds -->"

    code = kinds_in_code(ROOT / path)
    assert kinds_table(table(code))[1] == code
    assert kinds_table(table(code[::-1]))[1] != code  # out of order
    assert kinds_table(table([*code, "EV_ICE"]))[1] != code  # a kind that is no event
