"""`stratus sweep` and `stratus report` (issue 13): configs checked before anything runs,
one atomic row per cell, a killed sweep resumes without recomputing, local and Dask give the
same rows, a failing cell is recorded and does not stop the rest, the report's page loads
in a real browser with every figure."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stratus.app import sweep_store as store
from stratus.app.cli import main
from tests.helpers.paths import ROOT

WAITING = """
command = "waiting"
results = "{results}"
[[traces]]
label = "mms"
spec = "synthetic:mms?hours=2&cpu=1&mem=4"
seeds = [1, 2]
[[grid]]
policy = ["njw", "ajw-t"]
s = [90, 100]
[options]
reserved_cores = 1
reserved_mem_gb = 4
reserved_discount = 0.6
b = 900
"""


def _write(tmp_path: Path, text: str, name: str = "cfg.toml", **kw) -> Path:
    p = tmp_path / name
    p.write_text(text.format(results=tmp_path / "res", **kw))
    return p


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _rows(results: Path):
    df = store.read_rows(results)
    return df.drop(columns=["wall_seconds"]).sort_values("key").reset_index(drop=True)


@pytest.mark.slow
def test_sweep_runs_every_cell_once_then_skips_them(tmp_path, capsys):
    cfg = _write(tmp_path, WAITING)
    code, out, _ = _run(capsys, "sweep", cfg, "--workers", "1", "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["cells_total"] == 8 and doc["cells_run"] == 8 and doc["cells_skipped"] == 0
    assert doc["results_dir"] == str(tmp_path / "res")
    rows = store.read_rows(tmp_path / "res")
    assert len(rows) == 8 and set(rows["status"]) == {"ok"}
    assert rows["key"].is_unique
    assert set(rows["opt_policy"]) == {"njw", "ajw-t"}
    assert (rows["normalized_price"] > 0).all()
    # a rerun has nothing to do; a grown grid runs only the new cells
    code, out, _ = _run(capsys, "sweep", cfg, "--workers", "1", "--json")
    assert json.loads(out)["cells_skipped"] == 8 and json.loads(out)["cells_run"] == 0
    cfg.write_text(cfg.read_text().replace("s = [90, 100]", "s = [90, 100, 110]"))
    code, out, _ = _run(capsys, "sweep", cfg, "--workers", "1", "--json")
    doc = json.loads(out)
    assert (doc["cells_total"], doc["cells_run"], doc["cells_skipped"]) == (12, 4, 8)


@pytest.mark.slow
def test_a_load_report_is_said_once_per_sweep(tmp_path, capsys):
    """Every cell's worker printed its window's load report: once per cell."""
    trace = tmp_path / "t.csv"
    rows = ["j,s,r,c,m"] + [f"{i},{i * 600},{0 if i % 5 == 0 else 400},1,2" for i in range(20)]
    trace.write_text("\n".join(rows) + "\n")
    cfg = _write(tmp_path, f"""
command = "replay"
results = "{{results}}"
[[traces]]
label = "csv"
spec = "{trace}"
format = "generic?job_id=j&submit_s=s&runtime_s=r&cpu=c&mem_gib=m"
hours = 1
slices = 2
seeds = [1]
[[grid]]
scheduler = ["first-fit", "task-per-instance"]
estimator = ["oracle"]
""")
    code, out, err = _run(capsys, "sweep", cfg, "--workers", "1", "--no-cache", "--json")
    assert code == 0 and json.loads(out)["cells_run"] == 4
    assert err.count("t.csv: read 20 rows") == 1 and err.count("dropped 4: rows with") == 1


@pytest.mark.slow
def test_a_piped_sweep_says_where_it_stands(tmp_path, capsys):
    """Piped (not a terminal), a sweep said nothing until it ended: on a busy machine a
    user could not tell it was working. It says how many cells, then a line as they end."""
    cfg = _write(tmp_path, WAITING)
    code, out, err = _run(capsys, "sweep", cfg, "--workers", "1", "--json")
    assert code == 0 and json.loads(out)["cells_run"] == 8  # stdout: the one document
    lines = err.splitlines()
    assert lines[0] == "sweep: 8 cells to run, 1 at a time; a line as they finish"
    progress = [x for x in lines if x.startswith("sweep: [")]
    assert progress[0].startswith("sweep: [1/8] cells done, 0 failed, ")
    assert progress[-1].startswith("sweep: [8/8] cells done, 0 failed, ")
    assert "left" not in progress[-1] and "; last: mms seed " in progress[-1]
    code, _, err = _run(capsys, "sweep", cfg, "--workers", "1", "--no-progress", "--json",
                        "--results", tmp_path / "other")
    assert code == 0 and "sweep:" not in err


def test_progress_lines_are_spaced_out_and_name_the_cell(monkeypatch):
    import io

    from stratus.app.sweep_run import CellBar

    clock = iter([-3.0, 0.0, 1.0, 2.0, 6.5, 7.0, 9.0])
    monkeypatch.setattr("stratus.app.sweep_run.time.monotonic", lambda: next(clock))
    stream = io.StringIO()
    bar = CellBar(4, True, stream)
    bar.begin(2)  # the cells start at 0 s
    bar.step(True, "a seed 1 policy=njw", 1.04)  # 1 s: the first cell, always said
    bar.step(False, "b", 0.5)  # 2 s: within 5 s of the last line
    bar.step(True, "c", 3.0)  # 6.5 s
    bar.step(True, "d", 0.2)  # 7 s: the last, always said
    assert stream.getvalue().splitlines() == [
        "sweep: 4 cells to run, 2 at a time; a line as they finish",
        "sweep: [1/4] cells done, 0 failed, 1 s elapsed, about 3 s left; last: a seed 1 "
        "policy=njw in 1.0 s",
        "sweep: [3/4] cells done, 1 failed, 6 s elapsed, about 2 s left; last: c in 3.0 s",
        "sweep: [4/4] cells done, 1 failed, 7 s elapsed; last: d in 0.2 s"]
    quiet = io.StringIO()
    CellBar(4, False, quiet).step(True, "a", 1.0)
    assert quiet.getvalue() == ""


def test_keys_follow_configuration_trace_content_and_code(tmp_path):
    from stratus.app.sweep import identity, load_config

    (tmp_path / "t.swf").write_text("1 0 0 100 4 -1 -1 4 -1 -1 1 1 1 1 1 -1 -1 -1\n")
    text = WAITING.replace("synthetic:mms?hours=2&cpu=1&mem=4", str(tmp_path / "t.swf"))
    plan = load_config(str(_write(tmp_path, text)))
    c = plan.cells[0]
    a = store.cell_key(identity(c.spec, "code1"))
    assert a == store.cell_key(identity(c.spec, "code1"))
    assert a != store.cell_key(identity(c.spec, "code2"))
    (tmp_path / "t.swf").write_text("1 0 0 200 4 -1 -1 4 -1 -1 1 1 1 1 1 -1 -1 -1\n")
    assert a != store.cell_key(identity(c.spec, "code1"))
    # every cell of the grid has its own key
    assert len({store.cell_key(identity(x.spec, "code1")) for x in plan.cells}) == len(plan.cells)


@pytest.mark.parametrize("text, needle", [
    ("command = 'replay'\nresults = 'r'\n", "needs at least one [[traces]]"),
    ("command = 'nope'\nresults = 'r'\n[[traces]]\nspec = 'synthetic:mms'\n", "command takes"),
    ("results = 'r'\nbogus = 1\n[[traces]]\nspec = 'synthetic:mms'\n", "unknown top-level"),
    ("results = 'r'\n[[traces]]\nspec = 'synthetic:mms'\nslices = 0\n", "slices"),
    ("results = 'r'\n[[traces]]\nspec = 'synthetic:mms'\nwhat = 1\n", "unknown key"),
    ("results = 'r'\n[[traces]]\nspec = 'synthetic:mms'\n[grid]\nscheduler = ['nosuch']\n",
     "unknown scheduler 'nosuch'"),
    ("results = 'r'\n[[traces]]\nspec = 'synthetic:mms'\n[grid]\ntick = [-5]\n", "synthetic:mms: tick takes a number of seconds >= 1"),
    ("results = 'r'\n[[traces]]\nspec = 'synthetic:mms'\n[grid]\nscheduler = []\n", "empty"),
    ("results = [\n", "not valid TOML"),
])
def test_a_bad_config_is_one_line_before_any_cell_runs(tmp_path, capsys, text, needle):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    code, out, err = _run(capsys, "sweep", cfg, "--results", tmp_path / "res")
    assert code == 2 and out == ""
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "res" / "rows").exists()


def test_bad_executor_and_workers_and_results_inside_input(tmp_path, capsys):
    cfg = _write(tmp_path, WAITING)
    assert _run(capsys, "sweep", cfg, "--executor", "mpi")[0] == 2
    assert _run(capsys, "sweep", cfg, "--workers", "0")[0] == 2
    code, _, err = _run(capsys, "sweep", cfg, "--results", cfg)
    assert code == 2 and "input" in err


@pytest.mark.slow
def test_a_failing_cell_is_recorded_the_rest_run_and_the_exit_says_so(tmp_path, capsys):
    bad = tmp_path / "broken.swf"
    bad.write_text("this is not a workload\n")
    text = WAITING + f"""
[[traces]]
label = "broken"
spec = "{bad}"
"""
    cfg = _write(tmp_path, text)
    code, out, err = _run(capsys, "sweep", cfg, "--workers", "1", "--json")
    doc = json.loads(out)
    assert code == 1
    assert doc["cells_failed"] == 4 and doc["cells_run"] == 12
    rows = store.read_rows(tmp_path / "res")
    failed = rows[rows["status"] == "failed"]
    assert len(failed) == 4 and failed["error"].str.contains("broken.swf").all()
    assert "cell failed" in err
    # failed cells are retried, finished ones are not
    code, out, _ = _run(capsys, "sweep", cfg, "--workers", "1", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["cells_skipped"] == 8 and doc["cells_run"] == 4


KILLABLE = """
command = "replay"
results = "{results}"
[[traces]]
label = "g"
spec = "synthetic:google?scale=0.01"
hours = 2
slices = 4
seeds = [1]
[[grid]]
scheduler = ["stratus", "first-fit", "task-per-instance"]
"""


@pytest.mark.slow
@pytest.mark.usefixtures("one_spawner_at_a_time")  # kills a sweep mid-run
def test_a_sweep_killed_with_sigkill_resumes_without_recomputing(tmp_path):
    cfg = _write(tmp_path, KILLABLE)
    res = tmp_path / "res"
    cmd = [sys.executable, "-m", "stratus.app.cli", "sweep", str(cfg), "--workers", "1",
           "--json"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(store.finished_keys(res)) < 3:
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = store.finished_keys(res)
    assert 3 <= len(before) < 12, "the kill came too late to test a resume"
    import pyarrow.parquet as pq

    for p in (res / "rows").glob("*.parquet"):  # whole rows only: each file reads as one
        assert pq.read_table(p).num_rows == 1
    rows = store.read_rows(res)
    assert len(rows) == len(before) and set(rows["status"]) == {"ok"}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    doc = json.loads(out.stdout)
    assert out.returncode == 0, out.stderr
    assert doc["cells_skipped"] == len(before)
    assert doc["cells_run"] == 12 - len(before)
    after = store.read_rows(res)
    assert len(after) == 12 and after["key"].is_unique
    kept = after[after["key"].isin(before)]  # the finished rows were not rewritten
    assert set(kept["key"]) == before
    assert not [p for p in (res / "rows").iterdir() if p.name.startswith(".")]


@pytest.mark.slow
@pytest.mark.usefixtures("one_spawner_at_a_time")  # a pool, then a dask cluster
def test_local_and_dask_local_give_identical_rows(tmp_path, capsys):
    pytest.importorskip("dask.distributed", reason="the dist extra (dask[distributed]) is "
                                                   "not installed")
    cfg = _write(tmp_path, WAITING)
    assert _run(capsys, "sweep", cfg, "--workers", "2", "--results", tmp_path / "a")[0] == 0
    code, out, err = _run(capsys, "sweep", cfg, "--workers", "2", "--executor", "dask-local",
                          "--results", tmp_path / "b", "--json")
    assert code == 0, err
    assert json.loads(out)["cells_run"] == 8
    a, b = _rows(tmp_path / "a"), _rows(tmp_path / "b")
    assert len(a) == 8
    assert a.equals(b)


REPORTED = """
command = "replay"
results = "{results}"
[[traces]]
label = "Google-like"
spec = "synthetic:google?scale=0.005"
hours = 1
slices = 2
seeds = [1]
[[grid]]
scheduler = ["stratus", "fleet", "hotspot", "scloud", "fargate", "scloud+pack"]
[[grid]]
scheduler = ["stratus", "fleet"]
market = ["on-demand"]
[[grid]]
scheduler = ["stratus", "stratus-noclear"]
h = [0.1, 1]
"""


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """A finished replay sweep and a waiting sweep in one results directory, reported.
    The cells run in this process (--workers 1: the run_cell a pool's workers call; pools:
    test_local_and_dask_local_give_identical_rows): two spawned workers per sweep cost more
    in imports than the 32 small cells."""
    tmp = tmp_path_factory.mktemp("report")
    res = tmp / "res"
    for i, text in enumerate((REPORTED, WAITING)):
        cfg = tmp / f"c{i}.toml"
        cfg.write_text(text.format(results=res))
        assert main(["sweep", str(cfg), "--workers", "1", "--no-progress"]) == 0
    out = tmp / "report"
    assert main(["report", str(res), "-o", str(out), "--json"]) == 0
    return res, out


@pytest.mark.slow
def test_report_writes_a_page_whose_figures_all_exist(reported, capsys):
    res, out = reported
    page = (out / "index.html").read_text()
    imgs = [x.split('"')[0] for x in page.split('<img src="')[1:]]
    names = {p.name for p in out.iterdir()}
    assert {"fig4-cost.png", "fig5-utilization.png", "fig6-ablation.png",
            "fig7-on-demand.png", "fig8-sensitivity.png"} <= set(imgs)
    assert any(i.startswith("waiting-") for i in imgs)
    for i in imgs:
        assert i in names and (out / i).stat().st_size > 1000
    assert "Table 2" in page and "paper" in page and "± " in page
    # a second report needs --force; the results are an input it never writes into
    code, _, err = _run(capsys, "report", res, "-o", out)
    assert code == 2 and "--force" in err
    code, _, err = _run(capsys, "report", res, "-o", res / "rows")
    assert code == 2 and "input" in err
    code, out_text, _ = _run(capsys, "report", res, "-o", out, "--force")
    assert code == 0 and "report: " in out_text and "fig4-cost" in out_text


@pytest.mark.slow
def test_report_marks_the_references_and_gives_the_spread(reported):
    """Schedulers given perfect runtimes (stratus-oracle, the Fig. 6 chain) are references,
    not competitors: marked in the tables, the bars and the captions; each caption gives
    every scheduler's spread over the windows."""
    from stratus.app.report_html import build

    res, out = reported
    doc, _ = build(res)
    rows = doc["tables"]["fig4-cost"]
    marked = {r["scheduler"] for r in rows if r["reference"]}
    assert marked == {"scloud+pack"}  # of stratus, fleet, hotspot, scloud, scloud+pack
    page = (out / "index.html").read_text()
    assert "scloud+pack †" in page and "not a competitor" in page
    assert "Spread, mean ± sd:" in page and "stratus 0." in page


def test_the_registry_names_the_references():
    from stratus.app.registry import reference_of

    for name in ("stratus-oracle", "scloud+pack", "scloud+pack+scale",
                 "scloud+pack+scale+clear", "stratus-oracle?clearing.threshold=0.4"):
        assert "perfect runtimes" in reference_of(name), name
    for name in ("stratus", "stratus-noclear", "fleet", "hotspot", "scloud", "no-such"):
        assert reference_of(name) == "", name


def test_report_of_nothing_is_one_line(tmp_path, capsys):
    code, _, err = _run(capsys, "report", tmp_path, "-o", tmp_path / "out")
    assert code == 2 and "not a sweep's results directory" in err


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.slow
@pytest.mark.usefixtures("one_spawner_at_a_time")  # chromium
def test_report_loads_in_headless_chromium_with_every_figure(reported, tmp_path):
    sync = pytest.importorskip("playwright.sync_api", reason="playwright (the browser extra) "
                               "is not installed").sync_playwright
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no browser at {CHROMIUM}: install Debian's chromium "
                    "(apt install chromium) to run this test")
    _, out = reported
    errors = []
    with sync() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((out / "index.html").as_uri())
            page.wait_for_load_state("load")
            imgs = page.eval_on_selector_all(
                "img", "els => els.map(e => [e.getAttribute('src'), e.complete, "
                       "e.naturalWidth, e.getBoundingClientRect().width])")
            # the first screen opens with who is cheapest (issue 36)
            lead = page.eval_on_selector(
                "ul.lead", "e => [e.innerText, e.getBoundingClientRect().bottom]")
            page.screenshot(path=str(tmp_path / "first-screen.png"))
        finally:
            browser.close()
    assert errors == []
    assert len(imgs) >= 6
    for src, complete, width, shown in imgs:
        assert complete and width > 0, f"figure {src} did not load"
        # no figure shrunk past reading: a PNG wider than the page is shown scaled down,
        # its text with it (issue 36: the demo's Fig. 4 was 19 inches wide)
        assert shown >= 0.75 * width, f"figure {src}: {width} px shown at {shown:.0f}"
    text, bottom = lead
    assert "is the cheapest of" in text and "below the runner-up" in text
    assert bottom < 900, "the opening sentences are not on the first screen"
    from PIL import Image

    with Image.open(tmp_path / "first-screen.png") as shot:  # the page was drawn, not blank
        assert len(shot.convert("L").getcolors(maxcolors=1 << 16) or ()) > 20
