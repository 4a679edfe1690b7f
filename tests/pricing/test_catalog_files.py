"""Instance catalogs from files (issue 19): a user's own TOML or CSV catalog, strict errors
naming the file, row and field, the built-in catalogs and their price sources."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app import sweep_store
from stratus.app.cli import main
from stratus.base.errors import ConfigError
from stratus.pricing.catalog import M4, Catalog, InstanceType
from stratus.pricing.catalog_files import (
    builtin_names,
    get_catalog,
    load_catalog,
    read_catalog,
    to_csv,
    to_toml,
)
from tests.helpers.paths import ROOT

MY_TOML = """\
region = "eu-west-1"
as_of = "2025-01"
source = "our negotiated price sheet"

[[types]]
name = "c.small"
vcpu = 2
mem_gib = 4
ondemand_hourly = 0.09

[[types]]
name = "m.small"
vcpu = 2
mem_gib = 8
ondemand_hourly = 0.11
reserved_hourly = 0.07

[[types]]
name = "r.big"
family = "r"
vcpu = 64
mem_gib = 512
ondemand_hourly = 3.5
gpus = 0
source = "quote 2025-01-12"
verified = true
"""

MY_CSV = """\
# region = eu-west-1
# as_of = 2025-01
# source = our negotiated price sheet
name,vcpu,mem_gib,ondemand_hourly,reserved_hourly,family,gpus,source,verified
c.small,2,4,0.09,,,,,
m.small,2,8,0.11,0.07,,,,
r.big,64,512,3.5,,r,0,quote 2025-01-12,true
"""


def _fields(t: InstanceType) -> tuple:
    return (t.name, t.family, t.vcpu, t.mem_gib, t.gpus, t.ondemand_hourly, t.reserved_hourly,
            t.source, t.verified, t.capacity)


def _same(a: Catalog, b: Catalog) -> bool:
    return ([_fields(t) for t in a] == [_fields(t) for t in b]
            and (a.region, a.as_of, a.source) == (b.region, b.as_of, b.source))


@pytest.fixture()
def mine(tmp_path):
    (tmp_path / "mine.toml").write_text(MY_TOML)
    (tmp_path / "mine.csv").write_text(MY_CSV)
    return tmp_path / "mine.toml", tmp_path / "mine.csv"


def test_a_users_three_family_catalog_reads_the_same_from_toml_and_csv(mine):
    toml, csv = (load_catalog(str(p)) for p in mine)
    assert _same(toml, csv)
    assert toml.families == ["c", "m", "r"]  # family defaults to the name before its "."
    assert (toml.region, toml.as_of) == ("eu-west-1", "2025-01")
    assert toml["m.small"].reserved_hourly == 0.07 and toml["c.small"].reserved_hourly is None
    # unverified unless the file says so (it said "verified" of every type without it)
    assert toml["r.big"].verified and not toml["c.small"].verified
    assert not toml["m.small"].verified
    assert toml.name == toml.origin == str(mine[0])  # never mistaken for a built-in name
    assert get_catalog(str(mine[1])) is csv  # get_catalog takes a path too; read once


def test_a_changed_file_is_read_again(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text(MY_TOML)
    assert load_catalog(str(p))["c.small"].ondemand_hourly == 0.09
    p.write_text(MY_TOML.replace("0.09", "0.095"))
    assert load_catalog(str(p))["c.small"].ondemand_hourly == 0.095


# (file name, content, what the one error line must name besides the file)
MALFORMED = [
    ("missing.toml", MY_TOML.replace("ondemand_hourly = 3.5\n", ""),
     ["types[3] (r.big)", "'ondemand_hourly'", "missing"]),
    ("nonnumeric.toml", MY_TOML.replace("vcpu = 64", 'vcpu = "many"'),
     ["types[3] (r.big)", "'vcpu'", "not a number"]),
    ("negprice.toml", MY_TOML.replace("0.11", "-0.11"),
     ["types[2] (m.small)", "'ondemand_hourly'", "positive"]),
    ("zeromem.toml", MY_TOML.replace("mem_gib = 4\n", "mem_gib = 0\n"),
     ["types[1] (c.small)", "'mem_gib'", "positive"]),
    ("fracgpu.toml", MY_TOML.replace("gpus = 0", "gpus = 1.5"),
     ["types[3] (r.big)", "'gpus'", "whole number"]),
    ("neggpu.toml", MY_TOML.replace("gpus = 0", "gpus = -1"),
     ["types[3] (r.big)", "'gpus'", "whole number"]),
    ("dup.toml", MY_TOML.replace('name = "r.big"', 'name = "c.small"'),
     ["types[3] (c.small)", "'name'", "duplicate", "types[1]"]),
    ("unknownkey.toml", MY_TOML.replace("gpus = 0", "cpus = 4"),
     ["types[3] (r.big)", "'cpus'", "unknown field"]),
    ("unknownfile.toml", "regoin = 'x'\n" + MY_TOML, ["file-level key 'regoin'"]),
    ("empty.toml", 'region = "x"\n', ["no instance types"]),
    ("syntax.toml", MY_TOML.replace('name = "m.small"', 'name = "m.small'),
     ["not valid TOML", "line"]),
    ("badverified.toml", MY_TOML.replace("verified = true", 'verified = "maybe"'),
     ["types[3] (r.big)", "'verified'"]),
    ("column.csv", MY_CSV.replace("mem_gib,", "memory,"), ["line 4 (header)", "'memory'"]),
    ("nonnumeric.csv", MY_CSV.replace("m.small,2,8,", "m.small,2,eight,"),
     ["line 6 (m.small)", "'mem_gib'", "not a number"]),
    ("missing.csv", MY_CSV.replace("c.small,2,4,", "c.small,,4,"),
     ["line 5 (c.small)", "'vcpu'", "missing"]),
    ("dup.csv", MY_CSV + "m.small,4,16,0.2,,,,,\n", ["line 8 (m.small)", "'name'", "duplicate"]),
    ("short.csv", MY_CSV + "x.big,4,16\n", ["line 8 (x.big)", "3 fields"]),
    ("empty.csv", "# nothing here\n\n", ["no instance types"]),
    ("zeroreserved.csv", MY_CSV.replace("0.11,0.07", "0.11,0"),
     ["line 6 (m.small)", "'reserved_hourly'", "positive"]),
    ("inf.csv", MY_CSV.replace("3.5,", "inf,"), ["line 7 (r.big)", "'ondemand_hourly'"]),
    ("quote.csv", MY_CSV.replace("r.big,", '"r.big,'), ["line 7", "not valid CSV"]),
    ("catalog.yaml", MY_TOML, ["unknown extension '.yaml'"]),
]


def _one_error_line(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("stratus: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("fname,content,names", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_catalog_is_one_line_naming_file_row_and_field(tmp_path, capsys, fname,
                                                                   content, names):
    p = tmp_path / fname
    p.write_text(content)
    for argv in (["catalogs", "show", str(p)],
                 ["replay", "--trace", "synthetic:mms?lam=0.002", "--hours", "0.1",
                  "--catalog", str(p)],
                 ["waiting", "simulate", "--trace", "synthetic:mms?lam=0.002", "--hours", "0.1",
                  "--reserved", "1", "--reserved-cores", "1", "--reserved-mem-gb", "4",
                  "--policy", "njw", "--catalog", str(p)]):
        line = _one_error_line(capsys, argv)
        assert str(p) in line, line
        for n in names:
            assert n in line, (n, line)


def test_no_such_file_and_unknown_name(capsys, tmp_path):
    line = _one_error_line(capsys, ["catalogs", "show", str(tmp_path / "nope.toml")])
    assert "no such file" in line and "nope.toml" in line
    line = _one_error_line(capsys, ["compare", "--trace", "synthetic:mms?lam=0.002",
                                    "--hours", "0.1", "--catalog", "zz", "--jobs", "1"])
    assert "unknown catalog 'zz'" in line and "aws-2017-cmr" in line


def _replay_summary(capsys, catalog: str) -> dict:
    assert main(["replay", "--trace", "synthetic:google?scale=0.02", "--hours", "2",
                 "--seed", "3", "--market", "on-demand", "--catalog", catalog, "--json",
                 "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    doc.pop("wall_seconds", None)
    return doc


def test_replays_with_the_toml_and_the_csv_catalog_are_identical(mine, capsys):
    a, b = (_replay_summary(capsys, str(p)) for p in mine)
    assert a == b
    assert a["tasks_completed"] == a["tasks"] > 10
    bought = {k.split(".")[0] for k in a["cost_by_type"]}
    assert bought and bought <= {"c", "m", "r"}


def _no_wall(doc):
    if isinstance(doc, dict):
        return {k: _no_wall(v) for k, v in doc.items() if "wall" not in k}
    if isinstance(doc, list):
        return [_no_wall(v) for v in doc]
    return doc


@pytest.mark.slow
def test_every_registered_scheduler_runs_on_the_users_catalog_from_either_file(mine, capsys):
    from stratus.app.registry import scheduler_names

    docs = []
    for p in mine:
        assert main(["compare", "--trace", "synthetic:google?scale=0.02", "--hours", "2",
                     "--seed", "3", "--market", "on-demand", "--catalog", str(p), "--jobs",
                     "1", "--json", "--no-progress"]) == 0
        docs.append(_no_wall(json.loads(capsys.readouterr().out)))
    assert docs[0] == docs[1]
    runs = docs[0]["runs"]
    assert {r["scheduler"] for r in runs} >= set(scheduler_names())
    assert all(r["tasks_completed"] == r["tasks"] for r in runs)


def test_catalogs_lists_the_builtins_as_one_json_document(capsys):
    assert main(["catalogs", "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in docs] == builtin_names()
    cmr = next(d for d in docs if d["name"] == "aws-2017-cmr")
    assert cmr["families"] == ["c4", "m4", "r4"] and cmr["region"] == "us-west-2"
    assert cmr["types"] == 17
    assert main(["catalogs", "show", "aws-gpu-g5-p3", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpus"] and {t["name"]: t["gpus"] for t in doc["instance_types"]}[
        "p3.16xlarge"] == 8
    assert main(["catalogs", "show", "m4"]) == 0
    assert "m4.16xlarge" in capsys.readouterr().out


def test_a_users_price_shows_unverified_unless_the_file_says_so(mine, capsys):
    assert main(["catalogs", "show", str(mine[0])]) == 0
    rows = {line.split()[0]: line.split()[-1] for line in capsys.readouterr().out.splitlines()
            if line.startswith(("c.small", "m.small", "r.big"))}
    assert rows == {"c.small": "no", "m.small": "no", "r.big": "yes"}
    assert main(["catalogs", "show", "m5"]) == 0  # a built-in keeps what it states
    out = capsys.readouterr().out
    assert "m5.large" in out and "yes" in out and "no" in out


@pytest.mark.parametrize("name", builtin_names())
def test_each_builtin_loads_and_every_price_has_a_source(name):
    cat = load_catalog(name)
    assert len(cat) >= 6 and cat.region and cat.as_of and cat.source
    for t in cat:
        assert t.source or cat.source, t.name
        assert t.ondemand_hourly > 0 and t.vcpu > 0 and t.mem_gib > 0
        assert t.family == t.name.split(".")[0]
    if name.startswith("aws-"):  # shipped as TOML: the file says where each price is from
        assert all(t.source for t in cat)
        assert any(not t.verified for t in cat) == ("verified = false" in
                                                    _builtin_text(name))
        text = _builtin_text(name)  # each type states it: never taken by default
        assert text.count("[[types]]") == len(re.findall(r"(?m)^verified = ", text))


def _builtin_text(name: str) -> str:
    from stratus.pricing.catalog_files import DATA_DIR, PREFIX

    return (DATA_DIR / f"{PREFIX}{name}.toml").read_text()


def test_aws_2017_cmr_is_the_papers_region_and_m4_rows_equal_the_m4_catalog():
    cmr = load_catalog("aws-2017-cmr")
    assert cmr.region == "us-west-2" and cmr.as_of == "2017"
    assert cmr.families == ["c4", "m4", "r4"]
    m4_rows = [(t.name, t.vcpu, t.mem_gib, t.ondemand_hourly, t.family) for t in M4]
    assert [(t.name, t.vcpu, t.mem_gib, t.ondemand_hourly, t.family) for t in cmr
            if t.family == "m4"] == m4_rows
    assert [t.name for t in cmr if t.family == "c4"][-1] == "c4.8xlarge"
    assert [t.name for t in cmr if t.family == "r4"][-1] == "r4.16xlarge"
    gpu = load_catalog("aws-gpu-g5-p3")
    assert {t.family for t in gpu if t.gpus} == {"g5", "p3"} and all(t.gpus for t in gpu)


def test_a_sweep_cell_naming_a_catalog_file_is_keyed_by_its_content(mine):
    toml = str(mine[0])
    assert sweep_store.catalog_hashes({"catalog": "aws-2017-cmr"}) == {}
    h1 = sweep_store.catalog_hashes({"catalog": toml, "cloud-catalog": "m4"})
    mine[0].write_text(MY_TOML.replace("0.09", "0.08"))
    h2 = sweep_store.catalog_hashes({"catalog": toml})
    assert set(h1) == {"catalog"} and h1 != h2
    from stratus.app.spec import ReplaySpec
    from stratus.app.sweep import identity

    spec = ReplaySpec(trace="synthetic:mms", catalog=toml)
    k2 = sweep_store.cell_key(identity(spec, "code"))
    mine[0].write_text(MY_TOML)
    assert sweep_store.cell_key(identity(spec, "code")) != k2


# --- round trip: any valid catalog written as TOML and as CSV reads back the same ---------
_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e,
                              blacklist_characters='#,"\\'), min_size=1, max_size=12).map(
    str.strip).filter(bool)
_pos = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False, allow_infinity=False)


@st.composite
def catalogs(draw):
    n = draw(st.integers(1, 6))
    names = draw(st.lists(st.from_regex(r"[a-z][a-z0-9]{0,3}\.[a-z0-9]{1,8}", fullmatch=True),
                          min_size=n, max_size=n, unique=True))
    types = [InstanceType(nm, draw(st.floats(0.25, 256)), draw(st.floats(0.25, 2048)),
                          draw(_pos), family=draw(st.one_of(st.just(nm.split(".")[0]), _text)),
                          reserved_hourly=draw(st.none() | _pos), gpus=draw(st.integers(0, 16)),
                          source=draw(st.just("") | _text), verified=draw(st.booleans()))
             for nm in names]
    meta = {k: draw(st.just("") | _text) for k in ("region", "as_of", "source")}
    return Catalog(types, name="prop", **meta)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(cat=catalogs())
def test_any_valid_catalog_round_trips_through_toml_and_csv(tmp_path_factory, cat):
    d = tmp_path_factory.mktemp("rt")
    (d / "c.toml").write_text(to_toml(cat))
    (d / "c.csv").write_text(to_csv(cat))
    for p in (d / "c.toml", d / "c.csv"):
        back = read_catalog(p)
        assert _same(back, cat), p.read_text()
        assert all(not math.isnan(t.ondemand_hourly) for t in back)


def test_instance_type_refuses_bad_gpus():
    with pytest.raises(ConfigError, match="gpus"):
        InstanceType("x.y", 1, 1, 1, gpus=-1)
    with pytest.raises(ConfigError, match="gpus"):
        InstanceType("x.y", 1, 1, 1, gpus=1.5)
    assert InstanceType("x.y", 1, 1, 1).gpus == 0


def test_the_guide_examples_load_and_agree(tmp_path):

    part = (ROOT / "docs" / "guides" / "own-catalog.md").read_text()
    toml = part.split("```toml\n", 1)[1].split("```", 1)[0]
    csv = part.split("```csv\n", 1)[1].split("```", 1)[0]
    (tmp_path / "r.toml").write_text(toml)
    (tmp_path / "r.csv").write_text(csv)
    a, b = read_catalog(tmp_path / "r.toml"), read_catalog(tmp_path / "r.csv")
    assert a.families == ["c", "m", "r"]
    num = [(t.name, t.vcpu, t.mem_gib, t.gpus, t.ondemand_hourly, t.reserved_hourly) for t in a]
    assert num == [(t.name, t.vcpu, t.mem_gib, t.gpus, t.ondemand_hourly, t.reserved_hourly)
                   for t in b]
