"""The API runs in one process unless asked for workers, and a script that asks for them
outside ``if __name__ == "__main__":`` (each worker would re-import it and run it again) is
told so in one line before any worker starts (issue 35, item 5; docs/decisions.md, "The
API runs in one process")."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import stratus
from stratus.app import runs
from tests.helpers.paths import ROOT

TRACE = "synthetic:google?scale=0.01&hours=0.5"


def _script(tmp_path, body: str) -> subprocess.CompletedProcess:
    f = tmp_path / "script.py"
    f.write_text(textwrap.dedent(body))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, str(f)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def jobs_asked(monkeypatch):
    """The ``jobs`` each run_cells call was given (the replays themselves still run)."""
    asked = []
    real = runs.run_cells

    def spy(spec, trace, cells, history, warmup_h, jobs, *a, **kw):
        asked.append(jobs)
        return real(spec, trace, cells, history, warmup_h, 1, *a, **kw)

    monkeypatch.setattr(runs, "run_cells", spy)
    return asked


@pytest.mark.slow
@pytest.mark.usefixtures("no_integer_bound")
def test_compare_and_sensitivity_default_to_this_process(jobs_asked):
    stratus.compare(TRACE, ["hotspot"], seed=1)
    stratus.sensitivity(TRACE, h=[2], schedulers=["hotspot"], seed=1)
    stratus.compare(TRACE, ["hotspot"], seed=1, jobs=3)
    assert jobs_asked == [1, 1, 3]


def test_a_sweep_defaults_to_this_process(tmp_path, monkeypatch):
    from stratus.app import sweep

    seen = []
    monkeypatch.setattr(sweep, "run_sweep", lambda plan, ex, workers, progress:
                        seen.append(workers) or {})
    cfg = {"results": str(tmp_path / "r"), "traces": [{"spec": TRACE}],
           "grid": {"scheduler": ["hotspot"]}}
    stratus.sweep(cfg)
    stratus.sweep(cfg, workers=2)
    assert seen == [1, 2]


@pytest.mark.slow
@pytest.mark.usefixtures("one_spawner_at_a_time")  # workers, before the fix
def test_an_unguarded_script_asking_for_workers_is_told_in_one_line(tmp_path):
    run = _script(tmp_path, f"""\
        import stratus
        cmp = stratus.compare("{TRACE}", schedulers=["hotspot", "fleet"], jobs=2)
        print("ran")
        """)
    assert run.returncode == 1 and "ran" not in run.stdout
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("stratus.base.errors.ConfigError: ")
    assert f"{tmp_path / 'script.py'}, line 2" in last and 'if __name__ == "__main__":' in last
    assert "worker process died" not in run.stderr


@pytest.mark.slow
@pytest.mark.usefixtures("one_spawner_at_a_time")
def test_an_unguarded_script_runs_in_one_process(tmp_path):
    run = _script(tmp_path, f"""\
        import stratus
        cmp = stratus.compare("{TRACE}", schedulers=["hotspot", "fleet"])
        print(list(cmp.table["scheduler"]))
        """)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['hotspot', 'fleet']"


@pytest.mark.slow
def test_where_the_call_is(tmp_path):
    """unguarded_main on each kind of call site, in a script of its own."""
    run = _script(tmp_path, """\
        from stratus.app.workers import unguarded_main

        def call():
            return unguarded_main()

        top = call()
        if __name__ == "__main__":
            guarded = call()

            def main():
                return call()
            in_main = main()
        if __name__ != "__mp_main__" and True:
            other_test = call()
        print(top[1], guarded, in_main, other_test)
        """)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["6", "None", "None", "None"]


@pytest.mark.slow
def test_a_module_run_with_dash_m(tmp_path):
    """``python -m mod`` is re-run by a spawned worker; ``python -m pkg`` (its __main__.py,
    as ``python -m stratus.app.cli``) is not (multiprocessing.spawn)."""
    code = "from stratus.app.workers import unguarded_main\nprint(unguarded_main())\n"
    (tmp_path / "mod.py").write_text(code)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "__main__.py").write_text(code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    out = [subprocess.run([sys.executable, "-m", m], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=60) for m in ("mod", "pkg")]
    assert [o.stdout.strip() for o in out] == [f"('{tmp_path / 'mod.py'}', 2)", "None"], out


@pytest.mark.slow
def test_no_script_no_complaint():
    """Under pytest (a guarded main) or python -c, there is nothing to re-run."""
    from stratus.app.workers import unguarded_main

    assert unguarded_main() is None
    out = subprocess.run([sys.executable, "-c", "from stratus.app.workers import "
                          "unguarded_main; print(unguarded_main())"],
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.strip() == "None", out.stderr
