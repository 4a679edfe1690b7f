"""The README's Python example and examples/compare_schedulers.py run, as a newcomer would
run them: from the repository root, on the bundled Google 2011 excerpt."""

from __future__ import annotations

import re
import runpy

import pytest

from tests.helpers.paths import ROOT


def readme_python() -> str:
    """The README's first ```python block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert m, "README.md has no ```python block"
    return m.group(1)


@pytest.mark.slow
@pytest.mark.usefixtures("one_spawner_at_a_time")  # compare's default jobs
def test_readme_python_example_runs(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    code = compile(readme_python(), str(ROOT / "README.md"), "exec")
    exec(code, {"__name__": "__readme__"})
    out = capsys.readouterr().out
    for word in ("scheduler", "total_cost_usd", "normalized_cost", "stratus", "hotspot",
                 "task-per-instance"):
        assert word in out, out


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
