"""The three ways into a replay are one replay: ``stratus.replay(stratus.load_trace(SPEC,
...))``, ``stratus.replay(SPEC, ...)`` and ``stratus replay --trace SPEC ... --json`` give the
same cost and warm the estimator up on the same history, for every kind of trace Stratus
loads (issue 35, item 5). Each window is cut so that jobs precede it: a loaded window that
lost its history would warm up on none."""

from __future__ import annotations

import json

import pytest

import stratus
from stratus.app.cli import main
from tests.helpers.paths import DATA, FIXTURES

pytestmark = pytest.mark.usefixtures("no_integer_bound")

SACCT = f"generic?mapping={FIXTURES / 'generic' / 'sacct_mapping.json'}"
TASKS = ("generic?job_id=job&submit_s=submit_ms&runtime_s=duration_ms&cpu=cores"
         "&mem_gib=mem_mb&user=owner&time_unit=ms&mem_unit=MB")

# (trace, format, window options); each window has jobs in the history before it
KINDS = {
    "synthetic-google": ("synthetic:google?scale=0.01", None, {"hours": 1}),
    "synthetic-twosigma": ("synthetic:twosigma?scale=0.05", None, {"hours": 2}),
    "synthetic-mms": ("synthetic:mms?cpu=1&mem=4&lam=0.01", None, {"hours": 2}),
    "synthetic-slice": ("synthetic:google?scale=0.01", None,
                        {"hours": 1, "slice": 3, "slices": 5}),
    "google2011-fixture": (str(FIXTURES / "google2011" / "basic"), "google2011",
                           {"start": 3000, "hours": 3}),
    "google2011-excerpt": (str(DATA / "google2011-excerpt"), "google2011",
                           {"start": 9000, "hours": 0.25}),
    "swf-fixture": (str(FIXTURES / "swf" / "small.swf"), None, {"start": 20, "hours": 1}),
    "swf-nasa": (str(DATA / "NASA-iPSC-1993-3.1-cln.swf.gz"), None,
                 {"start": 986400, "hours": 1}),
    "umass-csv": (str(FIXTURES / "umass" / "jobs.csv"), "umass", {"start": 4000, "hours": 2}),
    "umass-parquet": (str(FIXTURES / "umass" / "jobs.pq"), "umass",
                      {"start": 4000, "hours": 2}),
    "generic-sacct": (str(FIXTURES / "generic" / "sacct.csv"), SACCT,
                      {"start": 2200, "hours": 2.5}),
    # (its first job ends after the second starts: a window with a history has no job)
    "generic-tasks": (str(FIXTURES / "generic" / "tasks.csv"), TASKS,
                      {"start": 0.1, "hours": 0.1}),
}
NO_HISTORY = {"generic-tasks"}


def _cli(capsys, trace: str, fmt: str | None, window: dict, *more: str) -> dict:
    argv = ["replay", "--trace", trace, "--seed", "1", "--no-progress", "--json", *more]
    if fmt:
        argv += ["--format", fmt]
    for k, v in window.items():
        argv += [f"--{k}", str(v)]
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _same(a: dict, b: dict, c: dict) -> None:
    for key in ("total_cost_usd", "estimator_warmup_jobs", "estimator_warmup_hours", "tasks"):
        assert a[key] == b[key] == c[key], (key, a[key], b[key], c[key])


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_loaded_window_replays_as_its_spec_and_the_cli(capsys, kind):
    trace, fmt, window = KINDS[kind]
    loaded = stratus.load_trace(trace, format=fmt, seed=1, **window)
    a = stratus.replay(loaded, seed=1).summary
    b = stratus.replay(trace, format=fmt, seed=1, **window).summary
    c = _cli(capsys, trace, fmt, window)
    _same(a, b, c)
    assert a["tasks"] > 0, a
    assert (a["estimator_warmup_jobs"] > 0) is (kind not in NO_HISTORY), a


def test_a_parquet_window_replays_as_its_spec_and_the_cli(capsys, tmp_path):
    """The canonical format, from a Parquet copy of the UMass fixture."""
    path = tmp_path / "jobs.parquet"
    stratus.load_trace(str(FIXTURES / "umass" / "jobs.csv"), format="umass").to_parquet(path)
    window = {"start": 4000, "hours": 2}
    a = stratus.replay(stratus.load_trace(str(path), seed=1, **window), seed=1).summary
    b = stratus.replay(str(path), seed=1, **window).summary
    _same(a, b, _cli(capsys, str(path), None, window))
    assert a["estimator_warmup_jobs"] == 2


def test_the_warmup_option_applies_to_a_loaded_window(capsys):
    trace, fmt, window = KINDS["umass-csv"]
    loaded = stratus.load_trace(trace, format=fmt, seed=1, **window)
    a = stratus.replay(loaded, seed=1, warmup_hours="0.5").summary
    b = stratus.replay(trace, format=fmt, seed=1, warmup_hours="0.5", **window).summary
    _same(a, b, _cli(capsys, trace, fmt, window, "--warmup-hours", "0.5"))
    assert a["estimator_warmup_hours"] == 0.5 and a["estimator_warmup_jobs"] == 0
    assert stratus.replay(loaded, seed=1).summary["estimator_warmup_jobs"] == 2


def test_estimate_on_a_loaded_window_warms_up_as_on_its_spec():
    trace, fmt, window = KINDS["generic-sacct"]
    a = stratus.estimate(stratus.load_trace(trace, format=fmt, seed=1, **window))
    b = stratus.estimate(trace, format=fmt, seed=1, **window)
    assert a == b and a["warmup_jobs"] == 1


def test_a_window_of_a_loaded_window_has_no_history():
    """Trace.window cuts a new window: the history before the old one is not its own."""
    trace, fmt, window = KINDS["umass-csv"]
    loaded = stratus.load_trace(trace, format=fmt, **window)
    assert loaded.origin is not None
    assert loaded.window(5000, 9000).origin is None
    summary = stratus.replay(loaded.window(5000, 9000), seed=1).summary
    # (the warm-up is in every learning replay's summary: none, here)
    assert summary["estimator_warmup_jobs"] == 0 and summary["estimator_warmup_hours"] == 0


def test_a_pickled_window_keeps_its_way_back_not_its_history():
    import pickle

    trace, fmt, window = KINDS["umass-csv"]
    loaded = stratus.load_trace(trace, format=fmt, **window)
    hist = loaded.origin.history(2.0)
    assert len(hist) == 2
    copy = pickle.loads(pickle.dumps(loaded))
    assert copy.origin._histories == {}
    assert copy.origin.history(2.0).frame.equals(hist.frame)


@pytest.mark.slow
def test_a_synthetic_trace_from_python_replays_as_its_spec(capsys):
    """``stratus.synthetic(NAME, **params)`` is the window of ``synthetic:NAME?params``."""
    spec = "synthetic:google?scale=0.01&hours=0.5"
    a = stratus.replay(stratus.synthetic("google", scale=0.01, hours=0.5, seed=1),
                       seed=1).summary
    b = stratus.replay(spec, seed=1).summary
    _same(a, b, _cli(capsys, spec, None, {}))
    assert a["estimator_warmup_jobs"] > 0


# a Google 2011 window written in the format's options, and the same with --start/--hours
WRITTEN = {"google2011-fixture": (str(FIXTURES / "google2011" / "basic"), 3000, 3)}


@pytest.mark.slow
@pytest.mark.parametrize("kind", WRITTEN)
def test_a_window_written_in_the_format_is_the_start_hours_window(capsys, kind):
    """Issue 36: ``google2011?window_start_s=S&window_hours=H`` warmed no estimator while
    ``--start S --hours H`` did. One window, one run: the same tasks, cost and warm-up,
    from the CLI and from Python."""
    trace, start, hours = WRITTEN[kind]
    written = f"google2011?window_start_s={start}&window_hours={hours}"
    a = _cli(capsys, trace, written, {})
    b = _cli(capsys, trace, "google2011", {"start": start, "hours": hours})
    c = stratus.replay(stratus.load_trace(trace, format=written, seed=1), seed=1).summary
    _same(a, b, c)
    assert a["estimator_warmup_jobs"] > 0 and a["estimator_warmup_hours"] == max(1.0, hours)


def test_a_window_written_twice_is_refused_in_one_line(capsys):
    trace = str(FIXTURES / "google2011" / "basic")
    argv = ["replay", "--trace", trace, "--format", "google2011?window_start_s=3000&window_hours=3",
            "--start", "3000", "--hours", "3", "--json"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--start/--hours both name the window" in err[0], err


def test_a_cold_replay_says_so_in_one_line_and_a_warm_one_does_not(capsys):
    trace, fmt, window = KINDS["umass-csv"]
    cold = _cli(capsys, trace, fmt, window, "--warmup-hours", "0")
    capsys.readouterr()
    assert main(["replay", "--trace", trace, "--format", fmt, "--start", "4000", "--hours", "2",
                 "--seed", "1", "--no-progress", "--warmup-hours", "0"]) == 0
    out, err = capsys.readouterr()
    lines = [x for x in err.splitlines() if "starts cold" in x]
    assert lines == ["stratus: note: stratus: the history estimator starts cold "
                     "(--warmup-hours 0)"], err
    assert "0 h, 0 jobs (cold start)" in out  # the report's warm-up row
    assert cold["estimator_warmup_jobs"] == 0 and cold["estimator_warmup_hours"] == 0.0
    main(["replay", "--trace", trace, "--format", fmt, "--start", "4000", "--hours", "2",
          "--seed", "1", "--no-progress", "--json"])
    out, err = capsys.readouterr()
    assert "starts cold" not in err and json.loads(out)["estimator_warmup_jobs"] == 2
