"""A sweep's rows are the direct replays of their cells (issue 22), over random grids with
aliases, repeated cells, options in [options] and in grids, and input files (a trace, a
catalog) edited between two sweeps into one results directory: a row is never stale and
never another cell's."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.app import sweep_store as store
from stratus.app.cli import main
from stratus.app.sweep import identity, load_config
from tests.helpers.paths import FIXTURES

FIX = FIXTURES
CATALOG = "[[types]]\nname = 'm.x'\nvcpu = 64\nmem_gib = 256\nondemand_hourly = {price}\n"
AXES = {"scheduler": ["first-fit", "task-per-instance", "stratus", "stratus-noclear"],
        "market": ["on-demand", "spot"],
        "tick": [30, 60, 300],
        "h": [0.5, 1, 10],
        "catalog": ["m4", "m5", "{box}/catalog.toml"],
        "spinup": ["0,0", "60,60", "30,120"]}


@st.composite
def grids(draw):
    names = draw(st.lists(st.sampled_from(sorted(AXES)), min_size=1, max_size=3, unique=True))
    first = {n: draw(st.lists(st.sampled_from(AXES[n]), min_size=1, max_size=2, unique=True))
             for n in names}
    fixed = {n: draw(st.sampled_from(AXES[n])) for n in
             draw(st.lists(st.sampled_from(sorted(set(AXES) - set(names))), max_size=1))}
    alias = "scheduler" in first and draw(st.booleans())
    second = draw(st.one_of(st.none(), st.just(first)))  # a grid repeating the first's cells
    return first, fixed, alias, second


def _toml(first: dict, fixed: dict, alias: bool, second: dict | None, box: Path) -> str:
    def val(v):
        return json.dumps(v.replace("{box}", str(box)) if isinstance(v, str) else v)

    def table(g):
        return "".join(f"{'schedulers' if (k == 'scheduler' and alias) else k} = "
                       f"[{', '.join(val(x) for x in vs)}]\n" for k, vs in g.items())

    text = (f'command = "replay"\nresults = "{box}/res"\n[[traces]]\nlabel = "small"\n'
            f'spec = "{box}/small.swf"\nseeds = [1]\n[[grid]]\n{table(first)}')
    if second is not None:
        text += f"[[grid]]\n{table(second)}"
    if fixed:
        text += "[options]\n" + "".join(f"{k} = {val(v)}\n" for k, v in fixed.items())
    return text


def _direct(spec) -> dict:
    """The cell replayed directly through the API: its summary without wall time, or the
    error a sweep would record."""
    from stratus.app.api import run_replay
    from stratus.app.sweep_run import _strip_wall

    try:
        return {"ok": _strip_wall(run_replay(spec).summary)}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:500]}


def _check(cfg: Path, capsys) -> int:
    assert main(["sweep", str(cfg), "--workers", "1", "--no-progress"]) in (0, 1)
    capsys.readouterr()
    plan = load_config(str(cfg))
    code = store.code_version()
    rows = store.read_rows(cfg.parent / "res").set_index("key")
    for c in plan.cells:
        key = store.cell_key(identity(c.spec, code))
        row = rows.loc[key]
        want = _direct(c.spec)
        if "ok" in want:
            assert row["status"] == "ok", (c.options, row["error"])
            got = json.loads(row["result_json"])
            assert got == json.loads(json.dumps(want["ok"], sort_keys=True, default=str)), \
                c.options
        else:
            assert row["status"] == "failed" and row["error"] == want["error"], c.options
    return len(plan.cells)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("STRATUS_SWEEP_PROPERTY_EXAMPLES", "6")), deadline=None,
          derandomize=os.environ.get("STRATUS_FUZZ_RANDOM") != "1",
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(g=grids())
def test_rows_equal_direct_replays_before_and_after_inputs_are_edited(tmp_path_factory,
                                                                       capsys, g):
    box = tmp_path_factory.mktemp("prop")
    shutil.copy(FIX / "swf" / "small.swf", box / "small.swf")
    (box / "catalog.toml").write_text(CATALOG.format(price=3.2))
    cfg = box / "sweep.toml"
    cfg.write_text(_toml(*g, box))
    n = _check(cfg, capsys)
    # edit both inputs: same paths, other content; the second sweep into the same
    # directory must not reuse a row of the old content
    text = (box / "small.swf").read_text().replace("   40    0  3600", "   40    0  1800")
    (box / "small.swf").write_text(text)
    (box / "catalog.toml").write_text(CATALOG.format(price=2.9))
    assert _check(cfg, capsys) == n
    keys, bad = store.finished_rows(box / "res")
    assert not bad
