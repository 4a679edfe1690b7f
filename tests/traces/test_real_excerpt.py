"""Real Google 2011 data: the bundled excerpt (tests/data/google2011-excerpt, always here)
through the loader and every scheduler, and, when ../shared/data is next to the project,
the excerpt's provenance and the 19-hour window against google-2011/stats.json."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stratus.app.registry import get_spec, make_estimator, make_scheduler, scheduler_names
from stratus.pricing.catalog import M4
from stratus.replays import replay
from stratus.sim.engine import ReplayConfig
from stratus.traces.describe import describe
from stratus.traces.loaders import load_file
from stratus.traces.schema import oversized_mask
from tests.helpers.paths import DATA, ROOT

EXCERPT = DATA / "google2011-excerpt"
# what make_google2011_excerpt.py selected: jobs whose first job SUBMIT is in [8400, 9600) s
STRETCH_US = (8400 * 10**6, 9600 * 10**6)
# a 2-hour window from the stretch's start: whole jobs only (Stratus §4.2)
WINDOW_S = (8400.0, 8400.0 + 2 * 3600.0)
WINDOW = f"google2011?window_start_s={WINDOW_S[0]:g}&window_hours=2"
# relative to the project root, so a fresh clone next to ../shared finds it too
SHARED = ROOT / ".." / "shared" / "data"
GOOGLE = SHARED / "google-2011"


def _events(table: str) -> list[list[str]]:
    path = EXCERPT / table / "part-00000-of-00500.csv.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [line.rstrip("\n").split(",") for line in fh]


@pytest.fixture(scope="module")
def selected() -> set[int]:
    """The excerpt's jobs, read independently of the loader."""
    first: dict[int, int] = {}
    for f in _events("job_events"):
        if f[3] == "0":
            first[int(f[2])] = min(int(f[0]), first.get(int(f[2]), int(f[0])))
    return set(first)


@pytest.fixture(scope="module")
def whole():
    return load_file(EXCERPT, "google2011")


@pytest.fixture(scope="module")
def windowed():
    return load_file(EXCERPT, WINDOW)


def test_the_excerpt_holds_whole_jobs_of_the_stretch(selected):
    job_events, task_events = _events("job_events"), _events("task_events")
    assert len(selected) == 234 and len(task_events) == 11_639 and len(job_events) == 702
    assert all(len(f) == 13 for f in task_events) and all(len(f) == 8 for f in job_events)
    assert {int(f[2]) for f in task_events} == selected == {int(f[2]) for f in job_events}
    submits = [int(f[0]) for f in job_events if f[3] == "0"]
    assert STRETCH_US[0] <= min(submits) and max(submits) < STRETCH_US[1]
    assert len({(f[2], f[3]) for f in task_events}) == 3_870  # distinct tasks
    assert sum(p.stat().st_size for p in EXCERPT.rglob("*.csv.gz")) < 2_000_000


def test_the_loader_reads_the_excerpt(whole, selected):
    f = whole.frame
    assert (whole.n_jobs, len(whole)) == (233, 3_839)
    assert set(f["job_id"].unique()) <= selected
    # the one job left out: all 31 of its tasks were killed or failed while pending
    rep = whole.meta["load_report"]
    assert rep["dropped"] == {"tasks never scheduled (killed or failed while pending)": 31}
    assert f["submit_s"].min() >= STRETCH_US[0] / 1e6
    # requests are scaled to the largest machine, 64 vCPU / 256 GiB (Stratus §4.2)
    assert 0 < f["cpu"].max() <= 64 and 0 < f["mem_gib"].max() <= 256
    assert set(np.unique(f["priority"])) <= set(range(12))


def test_a_window_keeps_whole_jobs_only(whole, windowed):
    f = windowed.frame
    end = (f["submit_s"] + f["runtime_s"]).max()
    assert WINDOW_S[0] <= f["submit_s"].min() and end <= WINDOW_S[1]
    assert 200 < windowed.n_jobs < whole.n_jobs and 1000 < len(windowed) < len(whole)
    assert windowed.meta["load_report"]["dropped"]["jobs ending after the window end"] > 0
    assert set(f["job_id"]) < set(whole.frame["job_id"])
    assert not oversized_mask(windowed, M4).any()  # every scheduler can place every task
    d = describe(windowed)
    assert 0.5 < d["single_task_job_share"] < 1 and d["tasks_per_job"]["max"] > 100
    assert d["priority_share"]["middle"] > 0 and d["constrained"]["cpu"] > 0.5
    # 20 minutes of submissions: no whole hour of arrivals to count
    assert f["submit_s"].max() - f["submit_s"].min() < 3600
    assert d["arrivals_per_hour"]["max"] == 0 and d["arrivals_per_hour"]["peak_to_trough"] is None


@pytest.mark.slow
@pytest.mark.parametrize("name", scheduler_names())
def test_every_scheduler_replays_the_real_window_on_spot(windowed, name):
    cfg = ReplayConfig(seed=1, estimator=make_estimator(get_spec(name).estimator or "oracle"))
    s = replay(windowed, make_scheduler(name), cfg).summary
    assert s["market"] == "spot"
    assert s["tasks_completed"] == s["tasks"] == len(windowed)
    assert s["total_cost_usd"] >= s["lower_bound_cost_usd"] > 0


# --- with the full data next to the project (skipped without it) ------------------------

@pytest.fixture(scope="module")
def google_2011() -> Path:
    if not (GOOGLE / "task_events").is_dir():
        pytest.skip(f"{GOOGLE} is absent (the shared data folder next to the project)")
    return GOOGLE


@pytest.mark.slow
def test_the_excerpt_is_rebuilt_byte_for_byte(google_2011, tmp_path):
    script = DATA / "make_google2011_excerpt.py"
    subprocess.run([sys.executable, str(script), "--source", str(google_2011), "--out",
                    str(tmp_path)], check=True, capture_output=True)
    for table in ("task_events", "job_events"):
        part = Path(table) / "part-00000-of-00500.csv.gz"
        assert (tmp_path / part).read_bytes() == (EXCERPT / part).read_bytes()


@pytest.mark.slow
def test_the_19_hour_window_matches_stats_json(google_2011):
    want = json.loads((google_2011 / "stats.json").read_text())
    d = describe(load_file(google_2011, "google2011?window_start_s=600&window_hours=19"))
    assert (d["jobs"], d["tasks"]) == (want["jobs"], want["tasks"]) == (14_304, 387_838)
    # stats.json rounds: shares to 3 decimals, requests to 2, runtimes to 0.1 s
    assert d["single_task_job_share"] == pytest.approx(want["single_task_job_share"], abs=5e-4)
    for k, v in want["tasks_per_job"].items():
        assert d["tasks_per_job"][k] == pytest.approx(v, abs=0.1), k
    for k, v in want["runtime_s"].items():
        assert d["runtime_s"][k] == pytest.approx(v, abs=0.1), k
    for key in ("cpu_request", "mem_request_gib"):
        for k, v in want[key].items():
            assert d[key][k] == pytest.approx(v, abs=5e-3), (key, k)
    assert d["priority_share"] == pytest.approx(want["priority_share"], abs=5e-4)
    assert "other" not in d["priority_share"]
    assert d["offered_load"]["vcpu"] == pytest.approx(want["offered_load_vcpu"], abs=1)
