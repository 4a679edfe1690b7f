"""The command line: exactly one JSON document with --json, one-line errors, tables."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from stratus.app.cli import main
from tests.helpers.paths import DATA, FIXTURES

KEYS = {"scheduler", "trace", "tasks", "tasks_completed", "total_cost_usd", "lower_bound_cost_usd",
        "instance_hours", "utilization", "latency", "instances_acquired", "migrations",
        "migration_seconds", "migration_footprint", "wall_seconds"}


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.slow
def test_acceptance_replay_json_as_a_real_process():
    exe = shutil.which("stratus") or str(__import__("pathlib").Path(sys.executable).parent / "stratus")
    # two hours of the full-scale day: 28,119 tasks (six took 2.4 times the CPU)
    proc = subprocess.run([exe, "replay", "--trace", "synthetic:google", "--hours", "2", "--seed", "7",
                           "--scheduler", "task-per-instance", "--json"],
                          capture_output=True, text=True, check=True)
    doc = json.loads(proc.stdout)  # exactly one JSON document: loads() rejects trailing text
    assert doc.keys() >= KEYS
    assert set(doc["utilization"]) >= {"cpu", "mem", "constraining"}
    assert set(doc["latency"]) == {"p50", "p95"}
    assert doc["tasks_completed"] == doc["tasks"] > 10_000
    assert doc["total_cost_usd"] >= doc["lower_bound_cost_usd"] > 0


@pytest.mark.slow
def test_replay_table_and_json_agree(capsys):
    args = ["replay", "--trace", "synthetic:mms?lam=0.05", "--hours", "2", "--seed", "3"]
    code, out, _ = run_cli(capsys, *args, "--json")
    assert code == 0
    doc = json.loads(out)
    code, table, _ = run_cli(capsys, *args)
    assert code == 0
    assert f"{doc['total_cost_usd']:,.2f}" in table and "fluid lower bound" in table


@pytest.mark.slow
def test_same_seed_same_numbers(capsys):
    args = ["replay", "--trace", "synthetic:twosigma?scale=0.05", "--hours", "3", "--json"]
    a = json.loads(run_cli(capsys, *args, "--seed", "5")[1])
    b = json.loads(run_cli(capsys, *args, "--seed", "5")[1])
    c = json.loads(run_cli(capsys, *args, "--seed", "6")[1])
    for d in (a, b, c):
        d.pop("wall_seconds")
    assert a == b and a != c


@pytest.mark.slow
@pytest.mark.usefixtures("one_spawner_at_a_time")  # compare's default --jobs
def test_compare_prints_one_json_document(capsys):
    code, out, _ = run_cli(capsys, "compare", "--trace", "synthetic:google?scale=0.05", "--hours", "1",
                           "--json")
    doc = json.loads(out)
    names = [r["scheduler"] for r in doc["runs"]]
    assert code == 0 and "task-per-instance" in names and len(names) >= 2


@pytest.mark.slow
def test_summary_records_the_migration_footprint(capsys):
    args = ["replay", "--trace", "synthetic:mms?lam=0.05", "--hours", "1", "--seed", "3", "--json"]
    assert json.loads(run_cli(capsys, *args)[1])["migration_footprint"] == "request"
    doc = json.loads(run_cli(capsys, *args, "--migration-footprint", "usage:0.50")[1])
    assert doc["migration_footprint"] == "usage:0.5"  # canonical spelling


def test_schedulers_json(capsys):
    code, out, _ = run_cli(capsys, "schedulers", "--json")
    assert code == 0 and "task-per-instance" in {s["name"] for s in json.loads(out)}


@pytest.mark.parametrize("argv, message", [
    (["replay", "--trace", "synthetic:google", "--scheduler", "nope"], "unknown scheduler 'nope'"),
    (["replay", "--trace", "synthetic:wat"], "unknown synthetic generator"),
    (["replay", "--trace", "/no/such/file.parquet"], "no such file"),
    (["replay", "--trace", "synthetic:google", "--estimator", "psychic"], "unknown estimator"),
    (["replay", "--trace", "synthetic:google", "--spinup", "fast"], "--spinup takes"),
    (["replay", "--trace", "synthetic:google", "--market", "moon"], "unknown market"),
    (["replay", "--trace", "synthetic:google", "--slice", "99"], "out of range"),
    (["replay", "--trace", "synthetic:google", "--migration-footprint", "usage:1.5"],
     "--migration-footprint takes 'request' or 'usage:F' with F in (0, 1], got 'usage:1.5'"),
    (["compare", "--trace", "synthetic:google", "--migration-footprint", "usage"],
     "--migration-footprint takes"),
    (["compare", "--trace", "synthetic:google", "--migration-footprint", "footprint"],
     "--migration-footprint takes"),
    (["compare", "--trace", "synthetic:google", "--jobs", "0"], "--jobs must be at least 1"),
    (["replay", "--trace", "synthetic:google", "--warmup-hours", "all"], "--warmup-hours takes"),
    (["estimate", "--trace", "synthetic:google", "--warmup-hours", "all"], "--warmup-hours takes"),
])
def test_errors_are_one_line_without_traceback(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv, "--hours", "1", "--json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_saves_tables(tmp_path, capsys):
    code, _, err = run_cli(capsys, "replay", "--trace", "synthetic:google?scale=0.05", "--hours", "1",
                           "--save", str(tmp_path), "--json")
    import pandas as pd

    assert code == 0 and "wrote" in err
    inst = pd.read_parquet(tmp_path / "instances.parquet")
    assert {"type", "cost_usd", "requested_s", "released_s"} <= set(inst.columns)


SLURM_CSV = ("JobID,Submit,Elapsed,NCPUS,Mem\n123_4,0,600,2,4\n123_5,10,300,2,4\n"
             "124,20,1200,4,8\n")
SLURM_FORMAT = "generic?job_id=JobID&submit_s=Submit&runtime_s=Elapsed&cpu=NCPUS&mem_gib=Mem"


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["replay", "--warmup-hours", "0"],
                                  ["qos", "run", "--processors", "8"],
                                  ["share", "simulate", "--reserved", "1"]])
def test_jobs_tables_keep_text_job_ids(tmp_path, capsys, argv):
    import pandas as pd

    trace = tmp_path / "slurm.csv"
    trace.write_text(SLURM_CSV)
    code, _, err = run_cli(capsys, *argv, "--trace", str(trace), "--format", SLURM_FORMAT,
                           "--save", str(tmp_path / "out"), "--json")
    assert code == 0, err
    jobs = pd.read_parquet(tmp_path / "out" / "jobs.parquet")
    ids = dict(zip(jobs["source_job_id"], jobs["job_id"]))
    assert ids == {"123_4": 0, "123_5": 1, "124": 2}
    assert list(jobs.columns).index("source_job_id") == list(jobs.columns).index("job_id") + 1


def _dropping_csv(path, oversized: bool = False):
    """60 one-task jobs over 5 hours; every tenth has runtime 0 (dropped by the loader),
    and with ``oversized`` every seventh asks for 100 cores (more than any m4 type)."""
    rows = ["JobID,Submit,Elapsed,NCPUS,Mem"]
    for i in range(60):
        cores = 100 if oversized and i % 7 == 3 else 1 + i % 3
        rows.append(f"{i},{i * 300},{0 if i % 10 == 0 else 300 + 7 * i},{cores},{1 + i % 4}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.slow
def test_the_load_report_prints_once_however_many_slices(tmp_path, capsys):
    """It printed once per slice: the file is loaded once, and says so once; what fitting
    each window to the catalog drops is said once per window."""
    trace = _dropping_csv(tmp_path / "t.csv", oversized=True)
    code, _, err = run_cli(capsys, "compare", "--trace", str(trace), "--format", SLURM_FORMAT,
                           "--slices", "3", "--hours", "2",
                           "--schedulers", "first-fit", "--jobs", "1", "--drop-oversized",
                           "--no-progress", "--json")
    assert code == 0, err
    assert err.count("t.csv: read 60 rows") == 1
    assert err.count("dropped 6: rows with runtime <= 0") == 1
    fits = [line for line in err.splitlines() if "larger than every m4 type" in line]
    assert len(fits) == 3 and all("t.csv (window from " in line for line in fits)


NASA = DATA / "NASA-iPSC-1993-3.1-cln.swf.gz"


@pytest.mark.slow
def test_describe_the_real_nasa_log(capsys):
    code, out, _ = run_cli(capsys, "traces", "describe", str(NASA), "--format", "swf", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["jobs"] == 18239 and doc["tasks"] == 18239
    # first submit to the last job's end: exactly the header's EndTime - StartTime
    assert doc["span_s"] == 7_949_022.0
    assert doc["load_report"]["dropped"] == {}


def test_describe_table_shows_the_nested_figures(capsys):
    # half an hour of M/M/s: no whole hour of arrivals, so no peak-to-trough ratio ("-")
    args = ["traces", "describe", "synthetic:mms", "--hours", "0.5"]
    doc = json.loads(run_cli(capsys, *args, "--json")[1])
    code, table, _ = run_cli(capsys, *args)
    rows = dict(line.rsplit(None, 1) for line in table.splitlines()[2:])
    assert code == 0 and rows["arrivals_per_hour.peak_to_trough"] == "-"
    assert doc["arrivals_per_hour"]["peak_to_trough"] is None
    assert rows["priority_share.unknown"] == "1.0000"  # M/M/s has no priorities
    assert rows["cpu_request.p10"] == "2.0000"
    assert rows["single_task_job_share"] == "1.0000" and "runtime_s.p10" in rows


def test_one_malformed_line_is_one_error_naming_it(tmp_path, capsys):
    import gzip

    with gzip.open(NASA, "rt") as fh:
        lines = fh.read().splitlines()
    lines[4999] = "   4977  12345 -1 oops 1 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1"
    bad = tmp_path / "bad.swf"
    bad.write_text("\n".join(lines) + "\n")
    code, out, err = run_cli(capsys, "traces", "describe", str(bad), "--format", "swf", "--json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{bad}:5000:" in err and "Traceback" not in err


@pytest.mark.slow
def test_convert_google_fixture_then_describe_and_replay(tmp_path, capsys):
    root = FIXTURES / "google2011" / "basic"
    out_pq = tmp_path / "g.parquet"
    code, out, err = run_cli(capsys, "traces", "convert", str(root), "--format", "google2011",
                             "-o", str(out_pq), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["tasks"] > 0 and doc["load_report"]["dropped"]
    assert "dropped" in err  # what was left out, and why, goes to stderr
    code, out, _ = run_cli(capsys, "traces", "describe", str(out_pq), "--json")
    assert json.loads(out)["tasks"] == doc["tasks"]
    code, out, _ = run_cli(capsys, "replay", "--trace", str(out_pq), "--scheduler", "first-fit",
                           "--json")
    assert code == 0 and json.loads(out)["tasks_completed"] == doc["tasks"]


@pytest.mark.slow
def test_oversized_jobs_are_refused_unless_dropped(capsys):
    args = ["replay", "--trace", str(NASA), "--start", "0", "--hours", "24", "--json"]
    code, out, err = run_cli(capsys, *args)  # 128-processor jobs: larger than m4.16xlarge
    assert code == 2 and "larger than every m4 instance type" in err and "--drop-oversized" in err
    code, out, err = run_cli(capsys, *args, "--drop-oversized")
    doc = json.loads(out)
    assert code == 0 and doc["tasks_completed"] == doc["tasks"] > 0
    assert "dropped" in err and "larger than every m4 type" in err


@pytest.mark.slow
def test_random_slices_are_seeded_and_inside_the_trace(capsys):
    from stratus.traces.spec import TraceSource

    src = TraceSource(str(NASA), "swf", seed=4)
    starts = [src.slice(k, 20, 24)[0] for k in range(20)]
    assert len(set(starts)) == 20 and min(starts) >= 0 and max(starts) <= 7_949_022 - 86_400

    def fresh(seed):  # a new source (one read of the log), asked in the opposite order
        other = TraceSource(str(NASA), "swf", seed=seed)
        return [other.slice(k, 20, 24)[0] for k in reversed(range(20))][::-1]

    assert starts == fresh(4) and starts != fresh(5)
    window = src.window(starts[3], 24)
    sub, end = window.column("submit_s"), window.column("submit_s") + window.column("runtime_s")
    assert sub.min() >= starts[3] and end.max() <= starts[3] + 86_400  # whole jobs only
    code, _, err = run_cli(capsys, "traces", "describe", str(NASA), "--slice", "20", "--json")
    assert code == 2 and "out of range" in err


def test_estimate_reports_an_error_distribution(capsys):
    code, out, _ = run_cli(capsys, "estimate", "--trace", "synthetic:google?scale=0.1", "--hours", "6",
                           "--json")
    doc = json.loads(out)
    assert code == 0 and doc["estimator"] == "history" and doc["warmup_jobs"] > 0
    assert 0 < doc["within_factor_2"] < 1 and "p50" in doc["relative_error_percentiles"]
    code, out, _ = run_cli(capsys, "estimate", "--trace", "synthetic:google?scale=0.1", "--hours", "2",
                           "--estimator", "oracle", "--json")
    assert json.loads(out)["median_abs_log_ratio"] == 0.0


def test_traces_formats(capsys):
    code, out, _ = run_cli(capsys, "traces", "formats", "--json")
    assert code == 0 and {"swf", "google2011", "umass", "generic", "canonical"} <= set(json.loads(out))
