"""`stratus traces convert`: synthetic specs as input, a round trip through the canonical
Parquet, and output safety (no overwrite without --force, temporary name then rename)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from stratus.app.cli import main
from stratus.traces import conversion
from stratus.traces.schema import Trace
from stratus.traces.spec import load_trace
from stratus.traces.synthetic import generate

SPEC = "synthetic:google?hours=2&seed=3&scale=0.2"


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line_error(code, out, err, message):
    assert code == 2 and out == "" and err.count("\n") == 1
    assert message in err and "Traceback" not in err


def test_synthetic_spec_round_trip(tmp_path, capsys):
    out = tmp_path / "day.parquet"
    code, stdout, _ = run_cli(capsys, "traces", "convert", SPEC, "-o", str(out), "--json")
    doc = json.loads(stdout)
    want = generate("google", hours=2, seed=3, scale=0.2)
    assert code == 0 and doc["tasks"] == len(want) > 100 and doc["input"] == SPEC
    back = load_trace(str(out))  # the `.parquet` loader, as replay and describe use it
    pd.testing.assert_frame_equal(back.frame, want.frame)
    assert back.name == want.name


def test_the_spec_carries_its_own_parameters(tmp_path, capsys):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    run_cli(capsys, "traces", "convert", "synthetic:mms?seed=1&hours=1", "-o", str(a))
    run_cli(capsys, "traces", "convert", "synthetic:mms?seed=2&hours=1", "-o", str(b))
    fa, fb = Trace.from_parquet(a).frame, Trace.from_parquet(b).frame
    pd.testing.assert_frame_equal(fa, generate("mms", seed=1, hours=1).frame)
    assert not fa.equals(fb)


def test_existing_output_is_refused_unless_forced(tmp_path, capsys):
    out = tmp_path / "day.parquet"
    out.write_bytes(b"precious")
    one_line_error(*run_cli(capsys, "traces", "convert", SPEC, "-o", str(out)),
                   "already exists; pass --force")
    assert out.read_bytes() == b"precious"
    code, _, _ = run_cli(capsys, "traces", "convert", SPEC, "-o", str(out), "--force")
    assert code == 0 and len(Trace.from_parquet(out)) > 100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day.parquet"]  # no temp left


def test_written_under_a_temporary_name_then_renamed(tmp_path, capsys, monkeypatch):
    out = tmp_path / "day.parquet"
    seen = []
    real_replace = conversion.os.replace

    def replace(src, dst):
        seen.append((src, dst, src.exists(), dst.exists()))
        real_replace(src, dst)

    monkeypatch.setattr(conversion.os, "replace", replace)
    assert run_cli(capsys, "traces", "convert", SPEC, "-o", str(out))[0] == 0
    [(src, dst, src_there, dst_there)] = seen
    assert src.parent == out.parent and src.name.startswith(".") and src != out
    assert dst == out and src_there and not dst_there


def test_a_failed_write_leaves_the_output_as_it_was(tmp_path, capsys, monkeypatch):
    out = tmp_path / "day.parquet"
    out.write_bytes(b"precious")

    def full_disk(self, path):
        with open(path, "wb") as fh:
            fh.write(b"PAR1 half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Trace, "to_parquet", full_disk)
    one_line_error(*run_cli(capsys, "traces", "convert", SPEC, "-o", str(out), "--force"),
                   "No space left on device")
    assert out.read_bytes() == b"precious"
    assert [p.name for p in tmp_path.iterdir()] == ["day.parquet"]


def test_a_file_input_is_converted_too(tmp_path, capsys):
    src = tmp_path / "in.parquet"
    generate("mms", hours=1).to_parquet(src)
    out = tmp_path / "out.parquet"
    assert run_cli(capsys, "traces", "convert", str(src), "-o", str(out))[0] == 0
    pd.testing.assert_frame_equal(Trace.from_parquet(out).frame, Trace.from_parquet(src).frame)
    one_line_error(*run_cli(capsys, "traces", "convert", str(src), "-o", str(out)),
                   "already exists")


@pytest.mark.parametrize("argv, message", [
    ([SPEC, "--format", "swf"], "takes no --format"),
    (["synthetic:nope"], "unknown synthetic generator"),
    (["synthetic:google?hours=x"], "must be a number"),
    (["/no/such/trace.swf"], "no such file"),
])
def test_bad_input_is_one_line(tmp_path, capsys, argv, message):
    out = tmp_path / "o.parquet"
    one_line_error(*run_cli(capsys, "traces", "convert", *argv, "-o", str(out)), message)
    assert list(tmp_path.iterdir()) == []


def test_bad_output_is_one_line(tmp_path, capsys):
    one_line_error(*run_cli(capsys, "traces", "convert", SPEC, "-o", str(tmp_path / "no" / "o.pq")),
                   "no such directory")
    one_line_error(*run_cli(capsys, "traces", "convert", SPEC, "-o", str(tmp_path), "--force"),
                   "is a directory")


# --- the output's name says its format ----------------------------------------------------
CANONICAL = {c: c for c in ("job_id", "task_id", "submit_s", "runtime_s", "cpu", "mem_gib",
                            "user", "job_name", "priority")}


@pytest.mark.parametrize("name", ["day.csv", "day.CSV", "day.csv.gz"])
def test_a_csv_name_gets_csv(tmp_path, capsys, name):
    """``-o out.csv`` wrote Parquet under a .csv name; it writes CSV, which reads back as
    the same trace."""
    from stratus.traces import generic

    out = tmp_path / name
    code, stdout, _ = run_cli(capsys, "traces", "convert", SPEC, "-o", str(out), "--json")
    want = generate("google", hours=2, seed=3, scale=0.2)
    assert code == 0 and json.loads(stdout)["tasks"] == len(want)
    head = out.read_bytes()[:4]
    assert head != b"PAR1" and (head[:2] == b"\x1f\x8b") == name.endswith(".gz")
    got = pd.read_csv(out, dtype={"user": str, "job_name": str})
    pd.testing.assert_frame_equal(got, want.frame, check_dtype=False, check_exact=True)
    assert len(generic.load(out, **CANONICAL)) == len(want)  # and it loads as a trace
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary left


@pytest.mark.parametrize("name", ["day.txt", "day", "day.json", "day.parquet.bak"])
def test_a_name_that_says_no_format_is_refused_before_any_work(tmp_path, capsys, monkeypatch,
                                                               name):
    def no_work(*args, **kwargs):
        raise AssertionError("loaded before the output was checked")

    monkeypatch.setattr(conversion.TraceSource, "full", no_work)
    one_line_error(*run_cli(capsys, "traces", "convert", SPEC, "-o", str(tmp_path / name)),
                   "end the name in .parquet (canonical Parquet) or .csv / .csv.gz")
    assert list(tmp_path.iterdir()) == []


def test_a_csv_of_text_job_ids_keeps_them(tmp_path, capsys):
    src = tmp_path / "slurm.csv"
    src.write_text("JobID,Submit,Elapsed,NCPUS,Mem\n123_4,0,600,2,4\n124,20,1200,4,8\n")
    fmt = "generic?job_id=JobID&submit_s=Submit&runtime_s=Elapsed&cpu=NCPUS&mem_gib=Mem"
    out = tmp_path / "canon.csv"
    assert run_cli(capsys, "traces", "convert", str(src), "--format", fmt, "-o", str(out))[0] == 0
    assert pd.read_csv(out)["source_job_id"].tolist() == ["123_4", "124"]
