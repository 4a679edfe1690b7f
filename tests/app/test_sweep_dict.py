"""``stratus.sweep(dict)``: a config given as a dict is read, checked and kept exactly as
its TOML file would be (issue 35, item 5: it was taken for a path, "cannot read")."""

from __future__ import annotations

import math
import re
import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

import stratus
from stratus.app import sweep_store as store
from stratus.app import sweep_toml
from stratus.app.sweep import identity, load_config
from stratus.base.errors import ConfigError

TOML = """
command = "waiting"
results = "{results}"
[[traces]]
label = "mms"
spec = "synthetic:mms?hours=1&cpu=1&mem=4"
seeds = [1, 2]
[grid]
policy = ["njw", "ajw-t"]
s = [3, 4]
[options]
reserved_cores = 1
reserved_mem_gb = 4
b = 900
"""


def _dict(results) -> dict:
    return {"command": "waiting", "results": str(results),
            "traces": [{"label": "mms", "spec": "synthetic:mms?hours=1&cpu=1&mem=4",
                        "seeds": (1, 2)}],
            "grid": {"policy": ["njw", "ajw-t"], "s": [3, 4]},
            "options": {"reserved_cores": 1, "reserved_mem_gb": 4, "b": 900}}


def _keys(plan) -> list:
    return [identity(c.spec, "code") for c in plan.cells]


@pytest.mark.slow
def test_a_dict_config_is_its_toml_file(tmp_path):
    f = tmp_path / "cfg.toml"
    f.write_text(TOML.format(results=tmp_path / "res"))
    from_file, from_dict = load_config(str(f)), load_config(_dict(tmp_path / "res"))
    assert len(from_dict.cells) == 8
    assert _keys(from_dict) == _keys(from_file)
    assert from_dict.results == from_file.results
    assert tomllib.loads(from_dict.config_text) == tomllib.loads(from_file.config_text)


@pytest.mark.parametrize(("change", "message"), [
    (lambda c: c.update(colour="red"), "unknown top-level key(s) colour"),
    (lambda c: c["options"].update(b=-1), "b "),
    (lambda c: c["traces"][0].pop("spec"), "traces[0]: needs spec"),
    (lambda c: c["grid"].update(policy=[]), "grid[0].policy: an empty list"),
    (lambda c: c["options"].update(tik=60), "tik"),
])
def test_a_bad_dict_is_refused_as_its_file_would_be(tmp_path, change, message):
    cfg = _dict(tmp_path / "res")
    change(cfg)
    with pytest.raises(ConfigError) as from_dict:
        load_config(cfg)
    f = tmp_path / "cfg.toml"
    f.write_text(sweep_toml.dumps(cfg))
    with pytest.raises(ConfigError) as from_file:
        load_config(str(f))
    assert message in str(from_dict.value)
    assert str(from_dict.value).startswith(f"{sweep_toml.NAME}: ")
    assert str(from_dict.value).replace(sweep_toml.NAME, str(f)) == str(from_file.value)


@pytest.mark.parametrize(("value", "where"), [
    (None, "options.b"), (object(), "options.b"), ([1, None], "options.b[1]"),
    ({"x": {1: 2}}, "options.b.x.1"),
])
def test_what_toml_cannot_hold_is_named(tmp_path, value, where):
    cfg = _dict(tmp_path / "res")
    cfg["options"]["b"] = value
    with pytest.raises(ConfigError, match="^" + re.escape(f"{sweep_toml.NAME}: {where}: ")):
        load_config(cfg)


def test_a_config_is_a_dict_or_a_path():
    with pytest.raises(ConfigError, match="a dict of its TOML keys, got list"):
        sweep_toml.dumps([1])


_keys_st = st.text(min_size=1, max_size=8)
_scalars = st.one_of(st.booleans(), st.integers(-2**63, 2**63 - 1),
                     st.floats(allow_nan=True), st.text(max_size=20))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_keys_st, inner, max_size=4)), max_leaves=12)


def _same(a, b) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            _same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@pytest.mark.slow
@given(st.dictionaries(_keys_st, _values, max_size=5))
def test_toml_text_reads_back_as_the_dict(cfg):
    assert _same(cfg, tomllib.loads(sweep_toml.dumps(cfg)))


@pytest.mark.slow
def test_sweep_takes_a_dict(tmp_path):
    cfg = _dict(tmp_path / "res")
    cfg["traces"][0]["seeds"] = [1]
    cfg["grid"] = {"policy": ["njw"], "s": [3]}
    doc = stratus.sweep(cfg)
    assert (doc["cells_total"], doc["cells_run"], doc["cells_failed"]) == (1, 1, 0)
    assert len(store.read_rows(tmp_path / "res")) == 1
    kept = list((tmp_path / "res" / "configs").glob("*.toml"))
    assert len(kept) == 1 and tomllib.loads(kept[0].read_text())["grid"] == cfg["grid"]
    assert stratus.sweep(cfg)["cells_skipped"] == 1


def test_the_cli_sweep_runs_one_worker_per_core_by_default(monkeypatch, tmp_path):
    """`stratus sweep` without --workers uses every core, as its help says; the API's own
    default (one process) must not leak into the CLI (the demo ran one cell at a time)."""
    import stratus.app.runs as runs
    import stratus.app.sweep as sweep_mod
    from stratus.app.cli import main

    seen = []

    def fake_run_config(config, results, executor, workers, *rest):
        seen.append((executor, workers))
        return {"cells_total": 0, "cells_run": 0, "cells_skipped": 0, "cells_failed": 0,
                "results_dir": str(tmp_path)}

    monkeypatch.setattr(sweep_mod, "run_config", fake_run_config)
    monkeypatch.setattr(runs, "default_jobs", lambda: 7)
    cfg = tmp_path / "c.toml"
    cfg.write_text("")
    assert main(["sweep", str(cfg), "--json"]) == 0
    assert main(["sweep", str(cfg), "--workers", "3", "--json"]) == 0
    assert seen == [("local", 7), ("local", 3)]
