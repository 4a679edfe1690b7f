"""The compiled core beside its pure-Python reference (issue 39): the build is there where a
compiler is, STRATUS_PURE_PYTHON=1 selects the reference, a missing or stale build falls
back with one notice, and random replays under both kernels agree tick by tick."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.registry import make_scheduler, scheduler_names
from stratus.base import native
from stratus.sim import engine as engine_mod
from stratus.sim.engine import Engine, ReplayConfig
from stratus.sim.kernel import COMPILED, PyKernel
from tests.helpers.strategies import configs, workloads

pytestmark = pytest.mark.usefixtures("no_integer_bound")


def test_the_compiled_core_is_built_where_a_compiler_is():
    """A fresh machine with a C compiler gets the compiled core from `make venv`: a build
    that failed quietly would leave every replay on the slow path."""
    if native.pure_requested():
        pytest.skip("STRATUS_PURE_PYTHON is set: the pure core is asked for")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler on this machine: the pure core is the one installed")
    assert COMPILED is not None, native.status()
    from stratus.sim.kernel import Kernel
    assert Kernel is COMPILED


def _chosen(env: dict) -> str:
    code = ("from stratus.sim.kernel import Kernel; from stratus.base import native; "
            "print(Kernel.__module__, native.status()['modules'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout + out.stderr


@pytest.mark.slow
def test_the_environment_selects_the_pure_core():
    env = {**os.environ, native.ENV: "1"}
    out = _chosen(env)
    assert out.startswith("stratus.sim.kernel ") and "'pure'" in out
    assert "notice" not in out  # asked for: nothing to tell


def test_a_missing_build_falls_back_with_one_notice(monkeypatch, capsys):
    monkeypatch.delenv(native.ENV, raising=False)
    monkeypatch.setattr(native, "_told", False)
    assert not native.wanted("stratus.sim.not_built")
    assert not native.wanted("stratus.sim.not_built_either")
    err = capsys.readouterr().err
    assert err.count("notice") == 1 and "(stratus.sim.not_built) is not built" in err
    assert native.status()["modules"]["stratus.sim.not_built"] == "not built"


def test_a_build_older_than_its_source_is_stale(tmp_path):
    built, src = tmp_path / "ckernel.cpython-311-x86_64-linux-gnu.so", tmp_path / "ckernel.pyx"
    built.write_bytes(b"")
    src.write_text("")
    os.utime(built, (1_000, 1_000))
    os.utime(src, (2_000, 2_000))
    assert "older than ckernel.pyx" in native._stale(SimpleNamespace(origin=str(built)))
    os.utime(built, (3_000, 3_000))
    assert native._stale(SimpleNamespace(origin=str(built))) is None


# --- the two kernels side by side, through whole replays --------------------------------

def _state(eng) -> tuple:
    """What a tick sees of the engine: clock, events, tasks, instances, money so far."""
    book, cloud, k = eng.book, eng.cloud, eng.kernel
    return (k.now, len(k), k.peek(), tuple(book.state), tuple(book.done), tuple(book.epoch),
            tuple(book.run_start), len(book.pending), book.n_done, eng.acct.migrations,
            tuple((i.iid, i.itype.name, i.market, i.free, i.state, tuple(i.tasks))
                  for i in cloud.alive.values()),
            len(cloud.ledger), cloud.revocations)


def _replay(kernel_cls, trace, name, conf):
    """A replay whose engine runs on ``kernel_cls``; its state at every tick, and its result."""
    ticks: list[tuple] = []
    held: list[Engine] = []
    cfg = ReplayConfig(record=True, progress=lambda t, done, n: ticks.append(_state(held[0])),
                       **conf)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine_mod, "Kernel", kernel_cls)
        eng = Engine(trace, make_scheduler(name), cfg)
    assert type(eng.kernel) is kernel_cls
    held.append(eng)
    res = eng.run()
    # repr: floats to the bit (NaN equal to NaN, -0.0 not to 0.0)
    summary = {k: v for k, v in res.summary.items() if k != "wall_seconds"}
    return [repr(s) for s in ticks], repr(summary)


@pytest.mark.slow
@pytest.mark.skipif(COMPILED is None, reason="the compiled core is not built here")
@settings(max_examples=60, deadline=None)
@given(trace=workloads(), conf=configs, name=st.sampled_from(scheduler_names()))
def test_random_replays_agree_tick_by_tick_under_both_kernels(trace, conf, name):
    pure = _replay(PyKernel, trace, name, conf)
    fast = _replay(COMPILED, trace, name, conf)
    assert len(pure[0]) == len(fast[0])
    for n, (a, b) in enumerate(zip(*(pure[0], fast[0]))):
        assert a == b, f"tick {n}"
    assert pure[1] == fast[1]


def test_compiled_files_are_build_outputs_never_committed():
    from tests.helpers.paths import ROOT
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    pyx = {p[:-4] for p in tracked if p.endswith(".pyx")}
    assert pyx, "the compiled core's sources are tracked"
    assert [p for p in tracked if p.endswith(".so") or p[:-2] in pyx and p.endswith(".c")] == []
