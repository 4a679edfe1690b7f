"""The Alibaba GPU 2023 loader (traces/alibaba_gpu.py) on rows copied from the real pod lists
(tests/fixtures/alibaba/README), and on the full files when ../shared/data is next to the
project: one pod = one job, Pending dropped, Failed by option, censored pods reported, the
window that starts where the load does, multigpu50 without times, bad rows named."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import example, given, settings

from stratus.base.errors import ConfigError, TraceError
from stratus.traces.alibaba_gpu import load
from stratus.traces.describe import describe
from stratus.traces.spec import TraceSource
from tests.helpers.corrupt import corrupt, ops
from tests.helpers.paths import FIXTURES, ROOT

HERE = FIXTURES / "alibaba"
DEFAULT = HERE / "openb_pod_list_default.csv"
LOAD_START = 9_964_972.0  # pod 0026's deletion: the real file's first deletion
TRACE_END = 12_902_960.0
REAL = ROOT / ".." / "shared" / "data" / "alibaba-gpu-2023"


def _pod(trace, n: int) -> dict:
    rows = trace.frame[trace.frame["job_id"] == n]
    assert len(rows) == 1, f"pod {n} is not in the trace once"
    return rows.iloc[0].to_dict()


def _report(trace) -> dict:
    return trace.meta["load_report"]


def _dropped(trace, start: str) -> int:
    return sum(n for why, n in _report(trace)["dropped"].items() if why.startswith(start))


# --- the default reading -------------------------------------------------------------------


def test_default_window_maps_each_pod_to_a_one_task_job():
    t = load(HERE)  # the folder: its default pod list
    f = t.frame
    assert t.n_jobs == len(t) and (f["task_id"] == 0).all()
    # window [first deletion, last time]; the five pods created before it are dropped
    assert t.meta["loader_window"]["start_s"] == LOAD_START
    assert t.meta["loader_window"]["end_s"] == TRACE_END
    assert _dropped(t, "pods created before the window start") == 5
    assert _dropped(t, "Pending pods") == 2
    assert set(f["job_id"]) == {33, 36, 38, 39, 48, 49, 54, 128, 422, 723, 2182, 4458, 5565}
    p = _pod(t, 39)  # 4000 milli-CPU, 15258 MiB, 1 GPU at 50/1000, scheduled 1 s late
    assert p["submit_s"] == 9_973_948 and p["runtime_s"] == 9_981_248 - 9_973_949
    assert p["cpu"] == 4.0 and p["mem_gib"] == pytest.approx(15258 / 1024)
    assert p["gpus"] == 1.0  # gpu=whole: a 5% share rents a whole GPU
    assert p["queue"] == "BE" and p["user"] == "unknown" and p["priority"] == 0
    assert _pod(t, 2182)["gpus"] == 4.0 and _pod(t, 48)["gpus"] == 0.0
    assert t.unknown("priority")


def test_failed_pods_kept_by_default_dropped_by_phases_and_counted_either_way():
    kept = load(DEFAULT)
    failed = {33, 36, 128, 2182}
    assert failed <= set(kept.frame["job_id"])
    assert any("Failed: 4" in n for n in _report(kept)["notes"])
    out = load(DEFAULT, phases="Running,Succeeded")
    assert not failed & set(out.frame["job_id"])
    assert _dropped(out, "pods of a phase left out by phases=Running,Succeeded") == 4
    assert len(out) == len(kept) - 4


def test_censored_pods_reported_and_kept_or_dropped():
    kept = load(DEFAULT)
    # 0723 still Running at the trace's end: kept, ending there; 0001 and 0005 are early
    assert _pod(kept, 723)["runtime_s"] == TRACE_END - 10_290_286
    note = next(n for n in _report(kept)["notes"] if n.startswith("censored"))
    assert "3 Running pods" in note and "1 of them kept" in note
    assert kept.meta["loader_window"]["censored_pods_kept"] == 1
    out = load(DEFAULT, censored="drop")
    assert 723 not in set(out.frame["job_id"])
    assert _dropped(out, "censored pods") == 3  # counted before the window drops the early two


def test_early_clip_keeps_pods_running_at_the_start_with_their_remaining_time():
    t = load(DEFAULT, early="clip")
    for n, deleted in ((0, 12_537_496), (1, TRACE_END), (5, TRACE_END), (17, 10_769_854)):
        p = _pod(t, n)
        assert p["submit_s"] == LOAD_START and p["runtime_s"] == deleted - LOAD_START
    # 0026 was deleted at the start itself: nothing left of it
    assert 26 not in set(t.frame["job_id"])
    assert _dropped(t, "pods created before the window start") == 1


def test_the_145_day_pod_with_the_whole_span():
    t = load(DEFAULT, window_start_s="0")
    assert t.meta["loader_window"]["start_s"] == 0.0
    p = _pod(t, 0)
    assert p["submit_s"] == 0 and p["runtime_s"] == 12_537_496  # 145.1 days
    assert _dropped(t, "pods created before") == 0


def test_gpu_shares_option():
    t = load(DEFAULT, gpu="share")
    assert _pod(t, 39)["gpus"] == pytest.approx(0.05)
    assert _pod(t, 38)["gpus"] == pytest.approx(0.48)
    assert _pod(t, 422)["gpus"] == 2.0  # a multi-GPU pod asks for whole GPUs
    assert any("share of one GPU" in n for n in _report(t)["notes"])


def test_describe_shows_the_loader_window():
    t = load(DEFAULT)
    d = describe(t)
    assert d["loader_window"]["start_s"] == LOAD_START
    assert d["loader_window"]["rule"].startswith("load start")
    # a window cut from the loaded trace is not the loader's: not shown as it
    assert "loader_window" not in describe(t.window(LOAD_START, LOAD_START + 86400))


def test_start_and_hours_cut_through_the_loader():
    src = TraceSource(str(HERE), "alibaba-gpu2023")
    assert src.origin() == 9_965_463  # pod 0033: the first pod in the window
    day = src.window(LOAD_START, 24.0)
    assert day.meta["loader_window"]["start_s"] == LOAD_START
    end = day.frame["submit_s"] + day.frame["runtime_s"]
    assert (end <= LOAD_START + 86400).all()
    assert set(day.frame["job_id"]) == {33, 36, 38, 39, 48, 49, 54, 128}


def test_gpushare100_variant():
    t = load(HERE, pods="gpushare100")
    # its own origin: the window starts at its own first deletion (pod 1352's)
    assert t.meta["loader_window"]["start_s"] == 9_545_368
    assert _dropped(t, "Pending pods") == 2
    assert _pod(t, 1092)["gpus"] == 1.0
    assert load(HERE, pods="gpushare100", gpu="share").frame["gpus"].max() < 1.0


def test_multigpu50_has_no_times_refused_unless_batch():
    with pytest.raises(TraceError, match=r"multigpu50\.csv: no qos, pod_phase, creation_time, "
                       r"deletion_time, scheduled_time columns.*batch_runtime_s"):
        load(HERE, pods="multigpu50")
    t = load(HERE, pods="multigpu50", batch_runtime_s="600")
    assert len(t) == 8 and (t.frame["submit_s"] == 0).all() and (t.frame["runtime_s"] == 600).all()
    assert sorted(t.frame["gpus"]) == [0.0 + 1] * 4 + [2.0, 4.0, 8.0, 8.0]
    with pytest.raises(ConfigError, match="batch_runtime_s"):
        load(DEFAULT, batch_runtime_s="600")


def test_the_node_list_is_refused(tmp_path):
    node = tmp_path / "openb_node_list_all_node.csv"
    node.write_text("sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,32000,262144,0,\n")
    with pytest.raises(TraceError, match="node list"):
        load(node)


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("opts, words", [
    ({"phases": "Pending"}, "Pending pods never ran"),
    ({"phases": "Done"}, "'phases' takes"),
    ({"gpu": "half"}, "'gpu' must be one of"),
    ({"censored": "maybe"}, "'censored'"),
    ({"early": "keep"}, "'early'"),
    ({"window_hours": "2"}, "window_hours needs window_start_s"),
    ({"window_start_s": "5", "window_end_s": "5"}, "must be after"),
    ({"pods": "all"}, "'pods'"),
    ({"color": "red"}, "unknown option 'color'"),
])
def test_bad_options(opts, words):
    with pytest.raises(ConfigError, match=words):
        load(DEFAULT, **opts)


def _with_line(tmp_path, line_no: int, field: str, value: str):
    """The fixture with one field of one line (1-based, header = 1) replaced."""
    lines = DEFAULT.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[line_no - 1].split(",")
    cells[header.index(field)] = value
    lines[line_no - 1] = ",".join(cells)
    out = tmp_path / DEFAULT.name
    out.write_text("\n".join(lines) + "\n")
    return out


# line 9 is pod 0038 (Running, 1 GPU at 480, created and scheduled at 9,973,579); line 19
# pod 2182 (4 GPUs)
@pytest.mark.parametrize("line, field, value, words", [
    (9, "gpu_milli", "1200", "column 'gpu_milli': gpu_milli is a share of one GPU"),
    (19, "gpu_milli", "500", "column 'gpu_milli': only a 1-GPU pod can ask for a share"),
    (9, "num_gpu", "0", "column 'gpu_milli': gpu_milli > 0 but num_gpu is 0"),
    (9, "pod_phase", "Done", "column 'pod_phase': expected one of Running"),
    (9, "qos", "Gold", "column 'qos': expected one of LS"),
    (9, "scheduled_time", "", "column 'scheduled_time': empty, but the pod is not Pending"),
    (9, "scheduled_time", "9973500", "column 'scheduled_time': before the pod's creation"),
    (9, "deletion_time", "9973578", "column 'deletion_time': 9973578 is before scheduled_time"),
    (9, "cpu_milli", "-4000", "column 'cpu_milli': must be >= 0"),
    (9, "memory_mib", "1.5", "column 'memory_mib': not an integer"),
    (9, "creation_time", "soon", "column 'creation_time': not a number"),
    (9, "name", "openb-pod-0036", "column 'name': pod number 36 already used on line 8"),
    (9, "name", "pod", "column 'name': expected a pod name ending in -NUMBER"),
])
def test_bad_row_names_file_line_and_field(tmp_path, line, field, value, words):
    path = _with_line(tmp_path, line, field, value)
    with pytest.raises(TraceError) as err:
        load(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:{line}: ") and words in msg, msg


def test_bad_row_is_one_line_and_exit_2_on_the_cli(tmp_path, capsys):
    from stratus.app.cli import main

    path = _with_line(tmp_path, 9, "gpu_milli", "1200")
    code = main(["traces", "describe", str(path), "--format", "alibaba-gpu2023", "--no-cache"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"{path}:9: column 'gpu_milli'" in err[0]


def test_cached_load_keys_on_the_pod_file(tmp_path):
    from stratus.traces.cache import TraceCache

    folder = tmp_path / "alibaba"
    shutil.copytree(HERE, folder)
    cache = TraceCache(tmp_path / "cache")
    first = cache.load(folder, "alibaba-gpu2023")
    again = cache.load(folder, "alibaba-gpu2023")
    assert again.meta["load_report"] == first.meta["load_report"]
    assert np.array_equal(again.frame["job_id"], first.frame["job_id"])
    # another pod file in the folder is another entry, not this one's
    other = cache.load(folder, "alibaba-gpu2023?pods=gpushare100")
    assert set(other.frame["job_id"]) != set(first.frame["job_id"])


# --- the full files (../shared/data next to the project) ------------------------------------

needs_real = pytest.mark.skipif(not (REAL / "openb_pod_list_default.csv").is_file(),
                                reason="../shared/data/alibaba-gpu-2023 is not next to the project")


@pytest.mark.slow
@needs_real
def test_real_files_counts_match_the_data_readme():
    t = load(REAL)
    rep = _report(t)
    assert rep["rows_read"] == 8152
    assert _dropped(t, "Pending pods") == 897
    assert _dropped(t, "pods created before the window start") == 33
    assert len(t) == 8152 - 897 - 33
    w = t.meta["loader_window"]
    assert w["start_s"] == LOAD_START and w["days"] == pytest.approx(34.0, abs=0.01)
    assert w["censored_pods"] == 34
    share = load(REAL, pods="gpushare100")
    assert _dropped(share, "Pending pods") == 1209 and share.meta["loader_window"]["censored_pods"] == 25
    with pytest.raises(TraceError, match="no qos, pod_phase"):
        load(REAL, pods="multigpu50")
    assert len(load(REAL, pods="multigpu50", batch_runtime_s="3600")) == 9061


def test_a_pod_list_with_only_its_header_is_one_trace_error(tmp_path):
    path = tmp_path / DEFAULT.name
    path.write_text(DEFAULT.read_text().splitlines()[0] + "\n")
    with pytest.raises(TraceError, match="holds no pods"):
        load(path)


# --- fuzzing: a damaged pod list loads or is one TraceError, never anything else -----------


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(ops=ops())
@example(ops=[("truncate", 109, b"\x00")])  # the header alone: a ValueError escaped
def test_fuzz_damaged_pod_list(tmp_path_factory, ops):
    path = tmp_path_factory.mktemp("openb") / DEFAULT.name
    path.write_bytes(corrupt(DEFAULT.read_bytes(), ops))
    try:
        t = load(path)
    except TraceError:
        return
    assert len(t) > 0 and (t.frame["runtime_s"] > 0).all()
    assert (t.frame["submit_s"] >= t.meta["loader_window"]["start_s"]).all()
