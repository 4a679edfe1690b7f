"""The command line: exactly one JSON document with --json, one-line errors, tables."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from stratus.cli import main

KEYS = {"scheduler", "trace", "tasks", "tasks_completed", "total_cost_usd", "lower_bound_cost_usd",
        "instance_hours", "utilization", "latency", "instances_acquired", "migrations",
        "migration_seconds", "wall_seconds"}


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_acceptance_replay_json_as_a_real_process():
    exe = shutil.which("stratus") or str(__import__("pathlib").Path(sys.executable).parent / "stratus")
    proc = subprocess.run([exe, "replay", "--trace", "synthetic:google", "--hours", "6", "--seed", "7",
                           "--scheduler", "task-per-instance", "--json"],
                          capture_output=True, text=True, check=True)
    doc = json.loads(proc.stdout)  # exactly one JSON document: loads() rejects trailing text
    assert doc.keys() >= KEYS
    assert set(doc["utilization"]) >= {"cpu", "mem", "constraining"}
    assert set(doc["latency"]) == {"p50", "p95"}
    assert doc["tasks_completed"] == doc["tasks"] > 10_000
    assert doc["total_cost_usd"] >= doc["lower_bound_cost_usd"] > 0


def test_replay_table_and_json_agree(capsys):
    args = ["replay", "--trace", "synthetic:mms?lam=0.05", "--hours", "2", "--seed", "3"]
    code, out, _ = run_cli(capsys, *args, "--json")
    assert code == 0
    doc = json.loads(out)
    code, table, _ = run_cli(capsys, *args)
    assert code == 0
    assert f"{doc['total_cost_usd']:,.2f}" in table and "fluid lower bound" in table


def test_same_seed_same_numbers(capsys):
    args = ["replay", "--trace", "synthetic:twosigma?scale=0.05", "--hours", "3", "--json"]
    a = json.loads(run_cli(capsys, *args, "--seed", "5")[1])
    b = json.loads(run_cli(capsys, *args, "--seed", "5")[1])
    c = json.loads(run_cli(capsys, *args, "--seed", "6")[1])
    for d in (a, b, c):
        d.pop("wall_seconds")
    assert a == b and a != c


def test_compare_prints_one_json_document(capsys):
    code, out, _ = run_cli(capsys, "compare", "--trace", "synthetic:google?scale=0.05", "--hours", "2",
                           "--json")
    doc = json.loads(out)
    names = [r["scheduler"] for r in doc["runs"]]
    assert code == 0 and "task-per-instance" in names and len(names) >= 2


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
