"""A scheduler's factory takes options (issue 21, item 2): ``NAME?OPTION=VALUE`` beside the
parts' ``KEY.NAME`` parameters, declared by the factory's signature, checked before
anything runs; the ablations are aliases, registered names for a factory with options set,
that keep their names; one set of values has one name; a sweep's grid varies options as it
varies parameters."""

from __future__ import annotations

import functools
import json
import pickle
from typing import Literal

import pytest

from stratus.app import api, registry, schedulers
from stratus.app.cli import main
from stratus.app.registry import SCHEDULERS, SchedulerSpec, get_spec, make_scheduler
from stratus.base.errors import ConfigError

# the integer bound has its own tests (conftest.no_integer_bound)
pytestmark = pytest.mark.usefixtures("no_integer_bound")

# small, but every alias decides differently from its base here
TRACE, HOURS, MARKET = "synthetic:google?scale=0.03", 3, "on-demand"

#: alias -> (base, options, estimator): what each registered alias stands for
ALIASES = {
    "stratus-noclear": ("stratus", {"clearing": False}, "history"),
    "stratus-oracle": ("stratus", {}, "oracle"),
    "stratus-bestfit": ("stratus", {"scaleout": "best-fit"}, "history"),
    "scloud+pack": ("scloud", {"pack": True}, "oracle"),
    "scloud+pack+scale": ("scloud", {"pack": True, "scale": True}, "oracle"),
    "scloud+pack+scale+clear": ("scloud", {"pack": True, "scale": True, "clear": True},
                                "oracle"),
    "fleet-mem": ("fleet", {"binpack": "memory"}, None),
    "fleet-diversified": ("fleet", {"allocation": "diversified"}, None),
}


def _summary(name: str) -> dict:
    import stratus

    out = dict(stratus.replay(TRACE, scheduler=name, hours=HOURS, market=MARKET).summary)
    for k in ("scheduler", "wall_seconds"):
        out.pop(k)
    return out


def test_the_registry_holds_these_aliases():
    names = registry.scheduler_names()  # loads the built-in ones
    assert {n: (s.base, s.preset, s.estimator) for n, s in SCHEDULERS.items() if s.base} == \
        ALIASES
    # registration order, which compare's default set keeps, is as before
    assert names == [
        "task-per-instance", "first-fit", "stratus", "stratus-noclear", "stratus-oracle",
        "hotspot", "scloud", "scloud+pack", "scloud+pack+scale", "scloud+pack+scale+clear",
        "fleet", "fleet-mem", "fleet-diversified", "karpenter", "stratus-bestfit", "eva"]


@pytest.mark.parametrize("name", list(ALIASES))
def test_an_alias_replays_exactly_as_its_base_factory_with_its_options(monkeypatch, name):
    base, options, estimator = ALIASES[name]
    # the base factory called with the options by hand, as an unrelated registered name
    direct = SchedulerSpec("direct", functools.partial(SCHEDULERS[base].factory, **options),
                           "test", estimator)
    monkeypatch.setitem(SCHEDULERS, "direct", direct)
    alias = _summary(name)
    assert alias == _summary("direct")
    assert alias != _summary(base), "the options change the replay"
    sched = make_scheduler(name)
    assert sched.name == name  # results, reports and the golden test see the alias
    assert get_spec(name).estimator == estimator


@pytest.mark.parametrize("name, canonical", [
    # an alias's options, written on its base, are the alias
    ("scloud?pack=true", "scloud+pack"),
    ("scloud?scale=true&pack=true", "scloud+pack+scale"),
    ("scloud?pack=1&scale=yes&clear=on", "scloud+pack+scale+clear"),
    ("stratus?clearing=false", "stratus-noclear"),
    ("stratus?scaleout=best-fit", "stratus-bestfit"),
    ("fleet?binpack=memory", "fleet-mem"),
    ("fleet?allocation=diversified&binpack=cpu", "fleet-diversified"),
    # a default is no option
    ("scloud?pack=false", "scloud"),
    ("stratus?clearing=true&scaleout=cost-efficiency", "stratus"),
    # a query on an alias overrides its preset
    ("scloud+pack?scale=true", "scloud+pack+scale"),
    ("scloud+pack?pack=false", "scloud"),
    ("scloud+pack+scale+clear?clear=false", "scloud+pack+scale"),
    ("stratus-noclear?clearing=true", "stratus"),
    # no alias holds the options: the nearest name, then what differs, options first
    ("scloud?scale=true", "scloud?scale=true"),
    ("scloud?clear=true&pack=true", "scloud+pack?clear=true"),
    ("scloud?clear=true&pack=true&scale=true&clearing.threshold=0.40",
     "scloud+pack+scale+clear?clearing.threshold=0.4"),
    ("fleet-mem?allocation=diversified", "fleet-mem?allocation=diversified"),
    ("stratus?clearing=false&scaleout=best-fit", "stratus-noclear?scaleout=best-fit"),
    ("stratus-bestfit?clearing=false", "stratus-noclear?scaleout=best-fit"),
    # the part parameters as before, on an alias too
    ("stratus?clearing.threshold=0.4", "stratus?clearing.threshold=0.4"),
    ("scloud+pack?migrator.unit=load", "scloud+pack?migrator.unit=load"),
    ("karpenter?scaler.keep=false", "karpenter?scaler.keep=false"),
    # the estimator is the alias's own: stratus-oracle names the oracle group
    ("stratus-oracle?clearing=false", "stratus-oracle?clearing=false"),
    ("stratus-oracle?clearing.ticks=5", "stratus-oracle?clearing.ticks=5"),
])
def test_one_set_of_options_has_one_name(name, canonical):
    spec = get_spec(name)
    assert spec.name == canonical
    assert get_spec(canonical).name == canonical  # the name reads back as itself
    assert spec.factory().name == canonical
    if "?" not in canonical:  # the registered scheduler itself
        assert spec is SCHEDULERS[canonical]


def test_a_query_keeps_the_estimator_of_the_name_it_is_on():
    assert get_spec("stratus-oracle?clearing=false").estimator == "oracle"
    assert get_spec("stratus?clearing=false").estimator == "history"
    assert get_spec("scloud?scale=true").estimator == "oracle"
    sched = get_spec("stratus-oracle?clearing=false").factory()
    assert sched.migrator is None


def test_options_and_parameters_build_the_composition():
    s = make_scheduler("scloud?pack=true&scale=true&clear=true&clearing.threshold=0.4")
    assert s.get_params()["clearing.threshold"] == 0.4
    assert type(s.packer).__name__ == "DotProductPacker"
    assert type(s.scaler).__name__ == "CostEfficiencyScaler"
    f = make_scheduler("fleet?binpack=memory&allocation=diversified")
    assert f.get_params() == {"packer.dim": 1, "scaler.copack": 1}
    assert type(f.scaler.choice).__name__ == "Diversified"


@pytest.mark.parametrize("name, needle", [
    ("scloud?nope=1", "scheduler scloud?nope=1: no option 'nope' (options: pack, scale, clear"),
    ("scloud?pack=maybe", "scheduler scloud?pack=maybe: pack: takes true or false, got 'maybe'"),
    ("stratus?scaleout=fast", "scaleout: takes cost-efficiency or best-fit, got 'fast'"),
    ("fleet?binpack=disk", "binpack: takes cpu or memory, got 'disk'"),
    ("scloud+pack?scale=2", "scale: takes true or false"),
    ("hotspot?bid=5", "hotspot?bid=5: no option 'bid' (it takes no options"),
    ("scloud?pack=true&pack=false", "given twice"),
    # an alias's composition has the parts it has
    ("scloud+pack?clearing.threshold=0.4", "scloud+pack: no parameter 'clearing.threshold'"),
    ("stratus-noclear?clearing.ticks=1", "stratus-noclear: no parameter 'clearing.ticks'"),
    ("fargate?pack=true", "a cost model"),
])
def test_a_bad_option_is_one_line_naming_the_scheduler_and_key(capsys, name, needle):
    with pytest.raises(ConfigError) as exc:
        get_spec(name)
    assert needle in str(exc.value)
    assert main(["replay", "--trace", "synthetic:google?scale=0.01", "--hours", "1",
                 "--scheduler", name]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


@pytest.fixture
def registry_copy(monkeypatch):
    """A copy of the table to register into (both modules see it)."""
    registry._load()
    table = dict(schedulers.SCHEDULERS)
    monkeypatch.setattr(schedulers, "SCHEDULERS", table)
    monkeypatch.setattr(registry, "SCHEDULERS", table)
    return table


class _Mine:
    """A plug-in's scheduler class, registered as its own factory: its keyword arguments
    are its options."""

    def __init__(self, mode: Literal["calm", "eager"] = "calm", level: int = 2) -> None:
        self.mode, self.level, self.name = mode, level, "mine"


def test_a_plug_in_factory_declares_options_by_its_signature(registry_copy):
    schedulers.register("mine", "a plug-in")(_Mine)
    spec = registry_copy["mine"]
    assert {k: (o.default, o.choices) for k, o in spec.options.items()} == \
        {"mode": ("calm", ("calm", "eager")), "level": (2, None)}
    s = make_scheduler("mine?level=3&mode=eager")
    assert (s.name, s.mode, s.level) == ("mine?level=3&mode=eager", "eager", 3)
    with pytest.raises(ConfigError, match="level: takes a whole number"):
        get_spec("mine?level=2.5")
    schedulers.alias("mine-eager", "mine", "eager", {"mode": "eager"})
    assert get_spec("mine?mode=eager").name == "mine-eager"
    assert make_scheduler("mine-eager").mode == "eager"


@pytest.mark.parametrize("register, needle", [
    (lambda: schedulers.alias("x", "nosuch", "d"), "no scheduler 'nosuch' registered"),
    (lambda: schedulers.alias("x", "scloud", "d", {"pack": False}),
     "the same scheduler as 'scloud'"),
    (lambda: schedulers.alias("x", "scloud", "d", {"pack": True}),
     "the same scheduler as 'scloud+pack'"),
    (lambda: schedulers.alias("x", "scloud+pack", "d", {"scale": True}),
     "the same scheduler as 'scloud+pack+scale'"),
    (lambda: schedulers.alias("x", "scloud", "d", {"pack": "maybe"}),
     "alias 'x': pack: takes true or false"),
    (lambda: schedulers.alias("x", "scloud", "d", {"packing": True}), "no option 'packing'"),
    (lambda: schedulers.alias("scloud+pack", "scloud", "d", {"clear": True}),
     "registered twice"),
    (lambda: schedulers.alias("a?b", "scloud", "d", {"clear": True}), "may not hold"),
    (lambda: schedulers.register("y", "d")(lambda n: None), "argument 'n' is not an option"),
    (lambda: schedulers.register("y", "d")(lambda n=None: None), "argument 'n' is not an"),
])
def test_a_bad_registration_is_refused(registry_copy, register, needle):
    with pytest.raises(ConfigError, match=None) as exc:
        register()
    assert needle in str(exc.value)


def test_an_alias_of_an_alias_is_of_its_base(registry_copy):
    spec = schedulers.alias("chain-oracle-clear", "scloud+pack", "d", {"clear": True})
    assert (spec.base, spec.preset) == ("scloud", {"pack": True, "clear": True})
    assert get_spec("scloud?clear=true&pack=true").name == "chain-oracle-clear"


@pytest.mark.parametrize("name", ["scloud+pack", "stratus-oracle",
                                  "scloud+pack?scale=true&clear=true&clearing.ticks=1",
                                  "fleet?allocation=diversified&binpack=memory&packer.dim=0"])
def test_a_named_scheduler_travels_pickled_to_a_worker_process(name):
    """Workers receive the SchedulerSpec pickled (stratus.app.runs._sendable); its factory
    is a module-level WithParams holding a module-level function and the values."""
    spec = get_spec(name)
    back = pickle.loads(pickle.dumps(spec))
    a, b = spec.factory(), back.factory()
    assert a.name == b.name == spec.name
    assert a.get_params() == b.get_params()
    assert [type(p).__name__ for p in a.parts().values()] == \
        [type(p).__name__ for p in b.parts().values()]


def _sweep(tmp_path, grid: str, options: str = "") -> dict:
    """Run a sweep of ``grid`` (--workers 1: in this process); its rows by scheduler."""
    from stratus.app.sweep_store import read_rows

    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f"""
command = "replay"
results = "{tmp_path / 'res'}"
[[traces]]
label = "g"
spec = "{TRACE}"
hours = {HOURS}
seeds = [0]
[[grid]]
{grid}
[options]
market = "{MARKET}"
{options}
""")
    assert main(["sweep", str(cfg), "--workers", "1", "--json", "--no-progress"]) == 0
    rows = read_rows(tmp_path / "res")
    return {json.loads(j)["scheduler"]: json.loads(r)
            for j, r in zip(rows["spec_json"], rows["result_json"])}


def _direct(capsys, name: str) -> float:
    capsys.readouterr()
    assert main(["replay", "--trace", TRACE, "--hours", str(HOURS), "--seed", "0",
                 "--market", MARKET, "--scheduler", name, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["total_cost_usd"]


def test_a_sweep_runs_stratus_with_clearings_threshold_from_its_toml(tmp_path, capsys):
    rows = _sweep(tmp_path, 'scheduler = ["stratus"]\nclearing.threshold = [0.4]')
    assert list(rows) == ["stratus?clearing.threshold=0.4"]
    assert rows["stratus?clearing.threshold=0.4"]["total_cost_usd"] == \
        _direct(capsys, "stratus?clearing.threshold=0.4")


def test_a_sweep_varies_a_factory_option_and_names_the_cells_canonically(tmp_path, capsys):
    # scloud?pack=true is scloud+pack: the two grids name one cell, which runs once
    rows = _sweep(tmp_path, 'scheduler = ["scloud"]\npack = [true, false]\n'
                            '[[grid]]\nscheduler = ["scloud+pack", "scloud?pack=true"]')
    assert sorted(rows) == ["scloud", "scloud+pack"]
    for name, doc in rows.items():
        assert doc["total_cost_usd"] == _direct(capsys, name), name
    assert rows["scloud"]["total_cost_usd"] != rows["scloud+pack"]["total_cost_usd"]


def test_a_grid_sets_options_of_each_scheduler_it_names(tmp_path):
    from stratus.app.sweep import load_config

    cfg = tmp_path / "s.toml"
    cfg.write_text(f"""
results = "{tmp_path / 'res'}"
[[traces]]
spec = "{TRACE}"
[[grid]]
scheduler = ["stratus-oracle", "stratus"]
clearing = [true, false]
scaleout = "best-fit"
""")
    names = sorted(c.spec.scheduler for c in load_config(str(cfg)).cells)
    assert names == ["stratus-bestfit", "stratus-noclear?scaleout=best-fit",
                     "stratus-oracle?clearing=false&scaleout=best-fit",
                     "stratus-oracle?scaleout=best-fit"]


@pytest.mark.parametrize("grid, needle", [
    # not the command's option nor the scheduler's: the command's own error
    ('scheduler = ["stratus"]\npack = [true]',
     "pack: not an option of replay nor of scheduler stratus (its options: clearing, "
     "scaleout; replay's: anti_affinity, "),
    ('schedulr = ["stratus"]', "schedulr: not an option of replay nor of scheduler stratus"),
    ('scheduler = ["hotspot"]\npack = [true]', "(its options: none; "),
    ('scheduler = ["scloud"]\npack = ["maybe"]', "pack: takes true or false, got 'maybe'"),
    ('scheduler = ["scloud?pack=true"]\npack = [false]', "pack given twice"),
    ('scheduler = ["nosuch"]\npack = [true]', "unknown scheduler 'nosuch'"),
])
def test_a_bad_option_in_a_grid_is_named_before_anything_runs(tmp_path, grid, needle):
    from stratus.app.sweep import load_config

    cfg = tmp_path / "s.toml"
    cfg.write_text(f'results = "{tmp_path}"\n[[traces]]\nspec = "{TRACE}"\n[[grid]]\n{grid}\n')
    with pytest.raises(ConfigError) as exc:
        load_config(str(cfg))
    assert needle in str(exc.value) and str(cfg) in str(exc.value)


def test_the_listing_shows_options_and_aliases(capsys):
    docs = {d["name"]: d for d in api.schedulers()}
    assert docs["scloud"]["options"] == {"pack": False, "scale": False, "clear": False}
    assert docs["scloud"]["alias_of"] is None and docs["scloud"]["choices"] == {}
    assert docs["scloud+pack"]["options"] == {"pack": True, "scale": False, "clear": False}
    assert docs["scloud+pack"]["alias_of"] == "scloud"
    assert docs["fleet-mem"]["choices"] == {"allocation": ["lowest-price", "diversified"],
                                            "binpack": ["cpu", "memory"]}
    assert docs["stratus-oracle"]["alias_of"] == "stratus"
    assert docs["stratus-oracle"]["estimator"] == "oracle"
    assert docs["hotspot"]["options"] == {} and docs["fargate"]["options"] == {}
    assert main(["schedulers", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(list(docs.values())))
    assert main(["schedulers"]) == 0
    text = capsys.readouterr().out
    for line in ["options (NAME?OPTION=VALUE&...):",
                 "  stratus: clearing=true, scaleout=cost-efficiency (cost-efficiency|best-fit)",
                 "  scloud: pack=false, scale=false, clear=false",
                 "  stratus-noclear = stratus?clearing=false",
                 "  stratus-oracle = stratus (estimator oracle)",
                 "  scloud+pack+scale+clear = scloud?clear=true&pack=true&scale=true",
                 "  fleet-diversified = fleet?allocation=diversified",
                 "  stratus: packer.unit_s=1.0, scaler.unit_s=1.0, clearing.threshold=0.5, "
                 "clearing.ticks=3"]:
        assert line + "\n" in text, line
    # what the aliases section says each alias is, is what it is
    for line in text.splitlines():
        if " = " in line and line.startswith("  "):
            alias, _, base = line.strip().partition(" = ")
            assert get_spec(base.split(" ")[0]).name == alias or "estimator" in base


@pytest.mark.parametrize("command", ["compare", "sensitivity"])
@pytest.mark.parametrize("pair", [("scloud+pack", "scloud?pack=true"),
                                  ("stratus?clearing.threshold=0.4",
                                   "stratus?clearing.threshold=0.40")])
def test_two_names_of_one_scheduler_are_refused_like_one_name_twice(capsys, command, pair):
    """compare would have replayed the scheduler twice and reported two rows of one name."""
    code = main([command, "--trace", "synthetic:google?scale=0.01", "--hours", "1",
                 "--schedulers", ",".join(pair)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "names one scheduler twice" in err and pair[1] in err
