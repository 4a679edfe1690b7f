"""The Python examples of the README and the docs run as a newcomer would run them: each
```python block saved as a file, exactly as written, and run with this Python as a script
(``__main__``, so a worker process it starts re-imports it: the README's example, exec'd
in the test's own process, hid that); and examples/compare_schedulers.py."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]
#: blocks that are not scripts: (doc, first line of the block) -> why
NOT_SCRIPTS = {
    ("docs/guides/scheduler-plugin.md", "# my_package/schedulers.py"):
        "a module: the next block imports it (written as my_package/schedulers.py)",
    ("docs/guides/scheduler-plugin.md", "from stratus.testing import StaticView, task"):
        "a test's body: `my_scheduler` is the reader's",
}


def blocks(doc: str, lang: str = "python") -> list[tuple[int, str]]:
    """(line, text) of each ```LANG block of ``doc``."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1))
            for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)]


def scripts() -> list:
    return [pytest.param(doc, code, id=f"{doc}:{line}") for doc in DOCS
            for line, code in blocks(doc)
            if (doc, code.splitlines()[0]) not in NOT_SCRIPTS]


def _setup(doc: str, where: Path) -> Path:
    """The files a doc's example reads that the doc itself gives; the directory to run in."""
    if doc == "docs/guides/own-trace.md":  # its jobs.csv and mapping, in a directory
        (csv,), (mapping,) = [[c for _, c in blocks(doc, lang)] for lang in ("csv", "json")]
        (where / "jobs.csv").write_text(csv)
        (where / "jobs-mapping.json").write_text(mapping)
        return where
    if doc == "docs/guides/scheduler-plugin.md":  # its package, importable
        (module,) = [c for _, c in blocks(doc) if c.startswith("# my_package/schedulers.py")]
        (where / "my_package").mkdir()
        (where / "my_package" / "__init__.py").write_text("")
        (where / "my_package" / "schedulers.py").write_text(module)
    return ROOT  # paths such as tests/data/... are from the repository's root


def test_every_python_block_is_a_script_or_says_why_not():
    found = {(doc, code.splitlines()[0]) for doc in DOCS for _, code in blocks(doc)}
    assert set(NOT_SCRIPTS) <= found, set(NOT_SCRIPTS) - found
    assert any(doc == "README.md" for doc, _ in found)


# no spawner lock: the API replays in its own process unless asked for more (jobs=1)
@pytest.mark.slow
@pytest.mark.parametrize(("doc", "code"), scripts())
def test_a_python_example_runs_as_a_file(tmp_path, doc, code):
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
        [str(ROOT), str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, str(script)], cwd=_setup(doc, tmp_path), env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    if doc == "README.md":
        for word in ("scheduler", "total_cost_usd", "normalized_cost", "stratus", "hotspot",
                     "task-per-instance"):
            assert word in run.stdout, run.stdout


@pytest.mark.slow
def test_compare_schedulers_example_runs(monkeypatch, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    plot = tmp_path / "normalized_cost.png"
    monkeypatch.setenv("STRATUS_EXAMPLE_PLOT", str(plot))
    monkeypatch.chdir(tmp_path)  # the script finds tests/data from its own path
    ns = runpy.run_path(str(ROOT / "examples" / "compare_schedulers.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert list(ns["table"]["scheduler"]) == ["stratus", "fleet", "hotspot"]
    assert "stratus saves" in out and "idle_shape" in out
    assert plot.is_file() and plot.stat().st_size > 0


def test_the_example_is_a_percent_script():
    """jupytext's percent format: cells open with `# %%`, text cells with
    `# %% [markdown]`; and it names nothing of the project outside the public API."""
    text = (ROOT / "examples" / "compare_schedulers.py").read_text(encoding="utf-8")
    assert text.startswith("# %% [markdown]\n")
    assert text.count("\n# %%\n") >= 5
    imports = re.findall(r"^\s*(?:import|from)\s+([\w.]+)", text, re.M)
    ours = {"stratus", "packers", "scalers", "pricing", "traces"}
    for name in imports:
        top = name.split(".")[0]
        if top in ours:
            assert name in ("stratus", "stratus.waiting", "stratus.qos", "stratus.sharing"), name
    assert not re.search(r"stratus\.app\b|stratus\.engine\b", text)
