"""The trace cache (issue 24, "Loading once"; traces/cache.py): a raw-format trace is loaded
once and then read from a Parquet entry keyed by its content, format, options and code; a
damaged entry is rebuilt, never used; results are the same with and without it. The suite
runs with the cache off (tests/conftest.py); these tests turn it on in a temporary
directory."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.app.cli import main
from stratus.traces import cache as C
from stratus.traces import google2011, swf
from stratus.traces.schema import Trace
from tests.helpers.paths import DATA, FIXTURES, ROOT

SWF = FIXTURES / "swf" / "small.swf"
GOOGLE = DATA / "google2011-excerpt"
REAL_GOOGLE = ROOT / ".." / "shared" / "data" / "google-2011"  # next to the project, if there


@pytest.fixture
def swf_copy(tmp_path) -> Path:
    p = tmp_path / "in" / "small.swf"
    p.parent.mkdir()
    shutil.copy(SWF, p)
    return p


@pytest.fixture
def calls(monkeypatch):
    """How many times each format's loader ran."""
    n = {"swf": 0, "google2011": 0}
    for mod, name in ((swf, "swf"), (google2011, "google2011")):
        real = mod.load

        def counted(*a, _real=real, _name=name, **k):
            n[_name] += 1
            return _real(*a, **k)
        monkeypatch.setattr(mod, "load", counted)
    return n


def entries(root: Path) -> list[Path]:
    d = root / C.ENTRIES
    return sorted(p for p in d.iterdir() if not p.name.startswith(".")) if d.is_dir() else []


def same(a: Trace, b: Trace) -> None:
    pd.testing.assert_frame_equal(a.frame, b.frame, check_exact=True)
    assert a.name == b.name and a.meta == b.meta
    assert json.dumps(a.meta) == json.dumps(b.meta)  # in order: reports print in it


# --- loading once -----------------------------------------------------------------------------
def test_first_load_writes_an_entry_the_second_reads_it(tmp_path, swf_copy, calls, capsys):
    cache = C.TraceCache(tmp_path / "cache")
    fresh = cache.load(swf_copy, "swf")
    assert calls["swf"] == 1 and len(entries(cache.root)) == 1
    assert "trace cache" not in capsys.readouterr().err  # a fresh load says nothing new
    again = cache.load(swf_copy, "swf")
    assert calls["swf"] == 1  # the loader did not run
    same(fresh, again)
    assert again.meta["load_report"] == fresh.meta["load_report"]  # its notes print again
    err = capsys.readouterr().err
    assert "read from the trace cache" in err and str(entries(cache.root)[0]) in err


def test_the_load_report_prints_the_same_from_the_cache(tmp_path, capsys):
    """A fixture with nine kinds of drop: the report's lines, in their order, again."""
    argv = ["traces", "describe", str(FIXTURES / "google2011" / "basic"), "--format",
            "google2011", "--json"]
    outs = []
    for extra in (["--no-cache"], ["--cache-dir", str(tmp_path)], ["--cache-dir", str(tmp_path)]):
        assert main([*argv, *extra]) == 0
        outs.append(capsys.readouterr())
    (plain, cold, warm) = outs
    assert plain.out == cold.out == warm.out
    assert len(plain.err.splitlines()) > 9 and plain.err == cold.err
    first, rest = warm.err.split("\n", 1)
    assert "read from the trace cache" in first and rest == plain.err


def test_text_job_ids_round_trip_with_their_numbers(tmp_path):
    """A generic table with Slurm array ids: the entry keeps the ids' mapping."""
    path = tmp_path / "slurm.csv"
    path.write_text("JobID,Submit,Elapsed,NCPUS,Mem\n123_4,0,600,2,4\n123_5,10,300,2,4\n"
                    "124,20,1200,4,8\n")
    fmt = "generic?job_id=JobID&submit_s=Submit&runtime_s=Elapsed&cpu=NCPUS&mem_gib=Mem"
    cache = C.TraceCache(tmp_path / "cache")
    fresh = cache.load(path, fmt)
    again = cache.load(path, fmt)
    assert len(entries(cache.root)) == 1
    same(fresh, again)
    assert dict(zip(again.frame["source_job_id"], again.frame["job_id"])) == {
        "123_4": 0, "123_5": 1, "124": 2}


def test_google2011_directory_round_trips_whole(tmp_path, calls):
    cache = C.TraceCache(tmp_path)
    fmt = "google2011?window_start_s=8500&window_hours=0.2"
    fresh = cache.load(GOOGLE, fmt)
    again = cache.load(GOOGLE, fmt)
    assert calls["google2011"] == 1
    same(fresh, again)
    assert again.has("anti_affinity") and again.frame["anti_affinity"].dtype == bool
    # every part the loader reads, by its table and name, in reading order
    assert [n for n, _ in C.input_files(GOOGLE, "google2011", {})] == [
        "job_events/part-00000-of-00500.csv.gz", "task_events/part-00000-of-00500.csv.gz"]


def test_changed_content_is_a_new_key_even_with_the_same_size_and_mtime(tmp_path, swf_copy,
                                                                         calls):
    cache = C.TraceCache(tmp_path / "cache")
    first = cache.load(swf_copy, "swf")
    st = swf_copy.stat()
    data = swf_copy.read_bytes()
    line = next(x for x in data.split(b"\n") if x.strip() and not x.startswith(b";"))
    run = list(re.finditer(rb"\S+", line))[3]  # the run time: same length, same size
    changed = line[:run.start()] + b"9" * len(run[0]) + line[run.end():]
    swf_copy.write_bytes(data.replace(line, changed, 1))
    os.utime(swf_copy, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime set back
    assert swf_copy.stat().st_size == st.st_size
    second = cache.load(swf_copy, "swf")
    assert calls["swf"] == 2 and len(entries(cache.root)) == 2
    assert not first.frame.equals(second.frame)
    # and the content, not the stat memo, is the key: the same bytes again are the first key
    swf_copy.write_bytes(data)
    third = cache.load(swf_copy, "swf")
    assert calls["swf"] == 2 and len(entries(cache.root)) == 2
    same(first, third)


def test_options_and_format_are_in_the_key(tmp_path, swf_copy, calls):
    cache = C.TraceCache(tmp_path)
    a = cache.load(swf_copy, "swf")
    b = cache.load(swf_copy, "swf?per_processor=1")
    c = cache.load(swf_copy, "swf?per_processor=1")
    assert calls["swf"] == 2 and len(entries(tmp_path)) == 2
    assert len(b) > len(a)  # one task per processor
    same(b, c)
    ka = C.TraceCache.key(swf_copy, "swf", {}, "x")
    assert ka != C.TraceCache.key(swf_copy, "swf", {"per_processor": "1"}, "x")
    assert ka != C.TraceCache.key(swf_copy, "generic", {}, "x")
    assert ka != C.TraceCache.key(swf_copy, "swf", {}, "y")  # content
    assert ka != C.TraceCache.key(Path("elsewhere.swf"), "swf", {}, "x")  # name and report


def test_code_version_is_in_the_key(tmp_path, swf_copy, monkeypatch):
    k1 = C.TraceCache.key(swf_copy, "swf", {}, "x")
    monkeypatch.setattr(C, "_CODE", [{**C.code_version(), "sources": "changed"}])
    assert C.TraceCache.key(swf_copy, "swf", {}, "x") != k1
    assert {"cache", "stratus", "libraries", "sources"} <= set(C.code_version())


def test_a_warm_load_hashes_nothing(tmp_path, swf_copy, monkeypatch):
    cache = C.TraceCache(tmp_path)
    cache.load(swf_copy, "swf")

    def refuse(files):
        raise AssertionError("hashed again")
    monkeypatch.setattr(C, "content_hash", refuse)
    cache.load(swf_copy, "swf")  # the stat memo holds the content hash


# --- damaged entries ----------------------------------------------------------------------------
def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _flip(p: Path) -> None:
    """One byte of the rows' data pages: found from the Parquet footer, so the place does
    not move with the length of the paths the entry holds (the load report names its input
    file, and so its temporary directory)."""
    body = C.unsealed(p.read_bytes())
    col = pq.ParquetFile(pa.BufferReader(body)).metadata.row_group(0).column(0)
    b = bytearray(p.read_bytes())
    b[col.data_page_offset + col.total_compressed_size // 2] ^= 0xFF
    p.write_bytes(bytes(b))


def _table(p: Path):
    return pq.read_table(pa.BufferReader(C.unsealed(p.read_bytes())))


def _write_sealed(p: Path, table) -> None:
    """``table`` as an entry whose trailer checks out: damage behind the trailer's back, so
    that the checks inside the entry are tested too."""
    buf = pa.BufferOutputStream()
    pq.write_table(table, buf)
    p.write_bytes(C.sealed(buf.getvalue().to_pybytes()))


def _rewrite(p: Path, **changes) -> None:
    table = _table(p)
    md = dict(table.schema.metadata)
    info = json.loads(md[C.META_KEY])
    for k, v in changes.items():
        if v is None:
            info.pop(k)
        else:
            info[k] = v(info) if callable(v) else v
    md[C.META_KEY] = json.dumps(info).encode()
    _write_sealed(p, table.replace_schema_metadata(md))


def _drop_metadata(p: Path) -> None:
    _write_sealed(p, _table(p).replace_schema_metadata({}))


def _drop_row(p: Path) -> None:
    _write_sealed(p, _table(p).slice(1))  # metadata kept: it says one row more


def _change_value(p: Path) -> None:
    table = _table(p)
    df = table.to_pandas(ignore_metadata=True)
    df.loc[0, "runtime_s"] += 1.0
    _write_sealed(p, pa.Table.from_pandas(df, preserve_index=False)
                  .replace_schema_metadata(table.schema.metadata))


def _report_edited(p: Path) -> None:
    """The load report's ``rows_read`` one less, in place: same length, trailer kept."""
    raw = p.read_bytes()
    m = re.search(rb'"rows_read": (\d)', raw)
    assert m, "the entry holds a load report"
    d = int(m.group(1))
    p.write_bytes(raw[:m.start(1)] + str((d + 9) % 10).encode() + raw[m.end(1):])


DAMAGE = {
    "truncated": _truncate,
    "empty": lambda p: p.write_bytes(b""),
    "flipped byte": _flip,
    "load report edited": _report_edited,
    "trailer only": lambda p: p.write_bytes(C.sealed(b"")),
    "plain parquet": lambda p: p.write_bytes(C.unsealed(p.read_bytes())),
    "not parquet": lambda p: p.write_text("hello"),
    "no metadata": _drop_metadata,
    "wrong row count": _drop_row,
    "a value changed": _change_value,
    "wrong checksum": lambda p: _rewrite(p, checksum="0" * 64),
    "another key": lambda p: _rewrite(p, key="f" * 32),
    "another layout": lambda p: _rewrite(p, cache=C.CACHE_VERSION + 1),
    "columns differ": lambda p: _rewrite(p, columns=lambda i: i["columns"][:-1]),
    "meta missing": lambda p: _rewrite(p, meta=None),
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_entry_is_rebuilt_never_used(tmp_path, swf_copy, calls, capsys, how):
    cache = C.TraceCache(tmp_path)
    fresh = cache.load(swf_copy, "swf")
    (entry,) = entries(tmp_path)
    DAMAGE[how](entry)
    capsys.readouterr()
    again = cache.load(swf_copy, "swf")
    assert calls["swf"] == 2  # loaded again
    same(fresh, again)
    err = capsys.readouterr().err
    assert f"trace cache entry {entry} is damaged" in err and "loading" in err
    # rewritten whole: the next load reads it
    third = cache.load(swf_copy, "swf")
    assert calls["swf"] == 2
    same(fresh, third)
    assert [p.name for p in tmp_path.joinpath(C.ENTRIES).iterdir()] == [entry.name]


def test_every_single_byte_change_to_an_entry_is_seen(tmp_path, swf_copy):
    """Each byte of a small entry, flipped in turn (and set to each of two other values):
    never decoded as a trace. Before the trailer, 2,313 of 7,071 flips were accepted."""
    cache = C.TraceCache(tmp_path)
    cache.load(swf_copy, "swf")
    (entry,) = entries(tmp_path)
    key = entry.stem.split("-", 1)[1]
    raw = entry.read_bytes()
    C.decode_entry(raw, key)  # as written, it is used
    accepted = []
    for i in range(len(raw)):
        for mask in (0xFF, 0x01, 0x80):
            b = bytearray(raw)
            b[i] ^= mask
            try:
                C.decode_entry(bytes(b), key)
            except C.Damaged:
                continue
            accepted.append((i, mask))
    assert accepted == [], f"{len(accepted)} of {3 * len(raw)} changes accepted"


@pytest.mark.slow
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(0, 1, exclude_max=True), value=st.integers(1, 255))
def test_a_changed_byte_on_disk_is_loaded_again(tmp_path_factory, where, value):
    """Through the cache's one door: an entry with any byte changed is rebuilt."""
    root = tmp_path_factory.mktemp("flip")
    src = root / "small.swf"
    shutil.copy(SWF, src)
    cache = C.TraceCache(root / "c")
    fresh = cache.load(src, "swf")
    (entry,) = entries(root / "c")
    b = bytearray(entry.read_bytes())
    i = int(where * len(b))
    b[i] ^= value
    entry.write_bytes(bytes(b))
    with pytest.raises(C.Damaged):
        C.read_entry(entry, entry.stem.split("-", 1)[1])
    same(fresh, cache.load(src, "swf"))
    C.read_entry(entry, entry.stem.split("-", 1)[1])  # rewritten whole


def test_a_damaged_hash_memo_is_hashed_again(tmp_path, swf_copy, calls):
    cache = C.TraceCache(tmp_path)
    cache.load(swf_copy, "swf")
    for memo in (tmp_path / C.HASHES).iterdir():
        memo.write_text("garbage")
    cache.load(swf_copy, "swf")
    assert calls["swf"] == 1 and len(entries(tmp_path)) == 1


def test_an_entry_that_does_not_read_back_is_never_published(tmp_path, swf_copy, monkeypatch,
                                                               calls):
    real = C._write_entry

    def bad_checksum(path, trace, info):
        real(path, trace, {**info, "checksum": "0" * 64})
    monkeypatch.setattr(C, "_write_entry", bad_checksum)
    cache = C.TraceCache(tmp_path)
    cache.load(swf_copy, "swf")
    assert entries(tmp_path) == [] and list((tmp_path / C.ENTRIES).iterdir()) == []


def test_writes_go_to_a_temporary_name_in_the_same_directory(tmp_path, swf_copy, monkeypatch):
    seen = []
    real = C._write_entry

    def spy(path, trace, info):
        seen.append(path)
        assert not any(p.suffix == C.SUFFIX and not p.name.startswith(".")
                       for p in path.parent.iterdir())  # nothing public yet
        real(path, trace, info)
    monkeypatch.setattr(C, "_write_entry", spy)
    C.TraceCache(tmp_path).load(swf_copy, "swf")
    (entry,) = entries(tmp_path)
    assert seen[0].parent == entry.parent and seen[0].name.startswith(".")
    assert not seen[0].exists()


def test_an_unwritable_cache_is_a_warning_not_a_failure(tmp_path, swf_copy, capsys):
    root = tmp_path / "cache"
    root.mkdir()
    (root / C.ENTRIES).write_text("a file where the entries' directory goes")
    t = C.TraceCache(root).load(swf_copy, "swf")
    assert len(t) > 0
    assert "warning: cannot write the trace cache" in capsys.readouterr().err


def test_meta_that_json_cannot_hold_is_not_cached(tmp_path):
    t = Trace(pd.DataFrame({"job_id": [1], "task_id": [0], "submit_s": [0.0],
                            "runtime_s": [1.0], "cpu": [1.0], "mem_gib": [1.0],
                            "user": ["u"], "job_name": ["j"], "priority": [0]}),
              meta={"tuple": (1, 2)})
    assert C.entry_info("k", t) is None
    assert not C.TraceCache(tmp_path).write(tmp_path / "e.entry", "k", t)
    assert not (tmp_path / "e.entry").exists()
    t.meta = {"b": 1, "a": 2}
    assert list(C.entry_info("k", t)["meta"]) == ["b", "a"]  # kept in its order
    assert C.TraceCache(tmp_path).write(tmp_path / "e.entry", "k", t)
    assert list(C.read_entry(tmp_path / "e.entry", "k").meta) == ["b", "a"]


# --- what is cached, and where ------------------------------------------------------------------
@pytest.mark.slow
def test_only_raw_formats_are_cached(tmp_path, swf_copy):
    pq_trace = tmp_path / "t.parquet"
    C.TraceCache(tmp_path / "x").load(swf_copy, "swf").to_parquet(pq_trace)
    assert C.cacheable(swf_copy, "swf") and C.cacheable(GOOGLE, "google2011")
    assert not C.cacheable(pq_trace, "canonical")
    assert not C.cacheable(FIXTURES / "umass" / "jobs.pq", "umass")  # Parquet already
    disguised = tmp_path / "t.csv"
    shutil.copy(pq_trace, disguised)
    assert not C.cacheable(disguised, "generic")  # Parquet by its magic bytes
    assert C.cacheable(FIXTURES / "umass" / "jobs.csv", "umass")
    for argv in (["--trace", "synthetic:mms?hours=0.5&lam=0.01"],
                 ["--trace", str(pq_trace)],
                 ["--trace", str(FIXTURES / "umass" / "jobs.pq"), "--format", "umass"]):
        assert main(["replay", *argv, "--scheduler", "task-per-instance", "--json",
                     "--no-progress", "--cache-dir", str(tmp_path / "c")]) == 0
        assert entries(tmp_path / "c") == []


def test_where_the_cache_is(tmp_path, monkeypatch):
    monkeypatch.delenv(C.ENV_OFF, raising=False)
    monkeypatch.setenv(C.ENV_DIR, str(tmp_path / "env"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert C.trace_cache().root == tmp_path / "env"
    assert C.trace_cache(tmp_path / "flag").root == tmp_path / "flag"  # the flag wins
    assert C.trace_cache(tmp_path / "flag", enabled=False) is None
    monkeypatch.delenv(C.ENV_DIR)
    assert C.trace_cache().root == tmp_path / "xdg" / "stratus"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/xdg")  # ignored (the XDG spec)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert C.trace_cache().root == tmp_path / "home" / ".cache" / "stratus"
    monkeypatch.setenv(C.ENV_OFF, "1")
    assert C.trace_cache() is None
    assert C.trace_cache(tmp_path / "flag").root == tmp_path / "flag"
    monkeypatch.setenv(C.ENV_OFF, "0")
    assert C.trace_cache() is not None


def test_the_suite_never_writes_the_users_cache():
    assert os.environ.get(C.ENV_OFF) == "1"
    assert C.trace_cache() is None


# --- the commands -------------------------------------------------------------------------------
def _summary(out: str) -> dict:
    def strip(d):
        if isinstance(d, dict):
            return {k: strip(v) for k, v in d.items() if "wall" not in k}
        if isinstance(d, list):
            return [strip(x) for x in d]
        return d
    return strip(json.loads(out))


def _replay(capsys, *argv) -> tuple[dict, str]:
    assert main(["replay", "--trace", str(GOOGLE), "--format", "google2011", "--seed", "1",
                 "--scheduler", "task-per-instance", "--json", "--no-progress", *argv]) == 0
    out = capsys.readouterr()
    return _summary(out.out), out.err


@pytest.mark.slow
def test_replay_is_the_same_with_and_without_the_cache(tmp_path, capsys, calls):
    plain, err_plain = _replay(capsys, "--no-cache")
    cold, err_cold = _replay(capsys, "--cache-dir", str(tmp_path))
    assert len(entries(tmp_path)) == 1
    warm, err_warm = _replay(capsys, "--cache-dir", str(tmp_path))
    assert calls["google2011"] == 2  # --no-cache and the cold run
    assert plain == cold == warm and plain["tasks"] == 3839
    # the loader's report on stderr, again from the cache, after one line that says so
    assert err_plain == err_cold
    first, rest = err_warm.split("\n", 1)
    assert "read from the trace cache" in first and rest == err_plain


@pytest.mark.slow
def test_no_cache_writes_nothing_and_the_environment_is_honoured(tmp_path, capsys,
                                                                  monkeypatch):
    monkeypatch.delenv(C.ENV_OFF)
    monkeypatch.setenv(C.ENV_DIR, str(tmp_path / "env"))
    _replay(capsys, "--no-cache")
    assert not (tmp_path / "env").exists()
    _replay(capsys)
    assert len(entries(tmp_path / "env")) == 1


def test_cache_options_on_every_trace_command(tmp_path, capsys):
    t = str(SWF)
    for argv in (["traces", "describe", t, "--json"],
                 ["estimate", "--trace", t, "--json"],
                 ["compare", "--trace", t, "--schedulers", "task-per-instance", "--jobs", "1",
                  "--json", "--no-progress"],
                 ["waiting", "simulate", "--trace", t, "--reserved", "2", "--reserved-cores",
                  "4", "--reserved-mem-gb", "16", "--policy", "njw", "--json"]):
        d = tmp_path / argv[0]
        assert main([*argv, "--cache-dir", str(d)]) == 0, argv
        assert len(entries(d)) == 1, argv
        assert main([*argv, "--no-cache"]) == 0
    capsys.readouterr()


def test_cache_options_are_checked_and_are_no_part_of_a_result(tmp_path, capsys):
    from stratus.app import spec as S

    assert main(["replay", "--trace", str(SWF), "--no-cache", "--cache-dir",
                 str(tmp_path)]) == 2
    assert "--no-cache and --cache-dir" in capsys.readouterr().err
    (tmp_path / "f").write_text("")
    assert main(["replay", "--trace", str(SWF), "--cache-dir", str(tmp_path / "f")]) == 2
    assert "not a directory" in capsys.readouterr().err
    a = S.ReplaySpec(trace=str(SWF))
    b = S.ReplaySpec(trace=str(SWF), cache_dir=str(tmp_path))
    c = S.ReplaySpec(trace=str(SWF), no_cache=True)
    assert a.canonical() == b.canonical() == c.canonical()  # one sweep cell, one key


def test_python_api_takes_the_cache(tmp_path, calls):
    import stratus

    a = stratus.load_trace(str(SWF), cache_dir=str(tmp_path))
    b = stratus.load_trace(str(SWF), cache_dir=str(tmp_path))
    assert calls["swf"] == 1 and len(entries(tmp_path)) == 1
    same(a, b)
    stratus.load_trace(str(SWF), no_cache=True)
    assert calls["swf"] == 2


SWEEP = """
command = "replay"
results = "{results}"
[[traces]]
spec = "{trace}"
seeds = [1, 2]
[[grid]]
scheduler = ["task-per-instance"]
"""


@pytest.mark.slow
def test_a_sweep_loads_through_the_cache(tmp_path, capsys, one_spawner_at_a_time):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(SWEEP.format(results=tmp_path / "res", trace=SWF))
    assert main(["sweep", str(cfg), "--workers", "2", "--json", "--no-progress",
                 "--cache-dir", str(tmp_path / "c")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cells_run"] == 2 and doc["cells_failed"] == 0
    assert len(entries(tmp_path / "c")) == 1
    cfg.write_text(SWEEP.format(results=tmp_path / "res2", trace=SWF))
    assert main(["sweep", str(cfg), "--workers", "1", "--json", "--no-progress",
                 "--cache-dir", str(tmp_path / "c")]) == 0
    from stratus.app import sweep_store as store

    one = store.read_rows(tmp_path / "res").drop(columns=["wall_seconds"])
    two = store.read_rows(tmp_path / "res2").drop(columns=["wall_seconds"])
    key = ["key"]
    pd.testing.assert_frame_equal(one.sort_values(key).reset_index(drop=True),
                                  two.sort_values(key).reset_index(drop=True))


def _load_in_process(args):
    root, path = args
    t = C.TraceCache(Path(root)).load(Path(path), "google2011")
    return C.frame_checksum(t.frame), len(t)


@pytest.mark.slow
def test_processes_writing_one_entry_at_once(tmp_path, one_spawner_at_a_time):
    """Two processes load the same trace into one cache at once: both whole, one entry,
    no temporary left behind (each renames a whole file; the last rename wins)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        got = list(ex.map(_load_in_process, [(str(tmp_path), str(GOOGLE))] * 2))
    assert got[0] == got[1]
    assert len(entries(tmp_path)) == 1
    assert sorted(p.name for p in (tmp_path / C.ENTRIES).iterdir()) == [entries(tmp_path)[0].name]
    t = C.read_entry(entries(tmp_path)[0], entries(tmp_path)[0].stem.split("-", 1)[1])
    assert (C.frame_checksum(t.frame), len(t)) == got[0]


@pytest.mark.slow  # reads ../shared/data
@pytest.mark.skipif(not (REAL_GOOGLE / "task_events").is_dir(),
                    reason="the real Google 2011 data is not here")
def test_real_google_directory_key_covers_every_part_and_nothing_else(tmp_path):
    files = C.input_files(REAL_GOOGLE, "google2011", {})
    names = [n for n, _ in files]
    parts = sorted((REAL_GOOGLE / "job_events").glob("*.csv*"))
    assert len([n for n in names if n.startswith("job_events/")]) == len(parts) > 0
    assert not any(n.endswith((".md", ".tsv", ".json")) for n in names)
    cache = C.TraceCache(tmp_path)
    sig = C._stat_sig(files)
    assert cache._content(files, sig) == C.content_hash(files)  # then memoized
    assert cache._content(files, sig) == C.content_hash(files)
