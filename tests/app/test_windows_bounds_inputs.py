"""Issue 35, item 3: empty windows are refused naming the window and the trace's span; time
options have a range, named in the error; a FIFO given as an input is refused at once (it
blocked forever). On the command line and through the Python API alike."""

from __future__ import annotations

import os
import threading
import time

import pytest

import stratus
from stratus.base.errors import ConfigError
from tests.helpers.cli import main_within
from tests.helpers.paths import FIXTURES
from tests.helpers.trace import make_trace

SWF = FIXTURES / "swf" / "small.swf"
GOOGLE = FIXTURES / "google2011" / "basic"
SPAN = "the trace covers [0, 3640] s of trace time"
RESCUE_S = 2.0  # how long a reader that opened a FIFO waits before the test lets it go


def one_line_error(capsys, args: list[str], *needles: str, report: bool = False) -> str:
    """Exit 2, one error line (after the loader's report with ``report``), naming each of
    ``needles``."""
    code = main_within([str(a) for a in args], 60)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
    lines = err.splitlines()
    assert lines and lines[-1].startswith("stratus: error: "), err
    assert report or len(lines) == 1, err
    for n in needles:
        assert n in lines[-1], err
    return lines[-1]


# --- empty windows ---------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", [
    ["replay"], ["compare", "--schedulers", "first-fit"], ["estimate"],
    ["waiting", "simulate", "--reserved", "1", "--reserved-cores", "1",
     "--reserved-mem-gb", "4", "--policy", "njw"],
])
def test_a_window_past_the_trace_is_refused_naming_it_and_the_span(capsys, tmp_path, cmd):
    one_line_error(capsys, [*cmd, "--trace", SWF, "--start", "999999999", "--hours", "24",
                            "--cache-dir", tmp_path],
                   f"{SWF}: the window start 999999999 s, 24 h ([999999999, 1000086399) s "
                   f"of trace time) holds no whole job", SPAN)


def test_a_window_too_short_for_any_job_and_an_empty_slice_are_refused(capsys):
    one_line_error(capsys, ["replay", "--trace", SWF, "--hours", "0.001", "--no-cache"],
                   "the window start 0 s, 0.001 h ([0, 3.6) s of trace time)", SPAN)
    one_line_error(capsys, ["compare", "--trace", SWF, "--slices", "3", "--hours", "0.01",
                            "--no-cache"],
                   "slice 0 of 3 (start ", "holds no whole job", SPAN)


def test_a_synthetic_window_that_drew_no_job_is_refused(capsys):
    one_line_error(capsys, ["replay", "--trace", "synthetic:google?scale=0.01",
                            "--hours", "0.001"],
                   "synthetic:google?scale=0.01: the window start 0 s, 0.001 h", "drew no job")


def test_a_google_window_given_as_format_options_names_the_events_span(capsys, tmp_path):
    # the loader cuts this window itself: the trace it returns is empty, and the span of the
    # raw events is what the user needs (the fixture's events: 1000 s to 21000 s)
    one_line_error(capsys, ["replay", "--trace", GOOGLE, "--format",
                            "google2011?window_start_s=999999&window_hours=1",
                            "--cache-dir", tmp_path],
                   "the google2011 window window_start_s=999999 window_hours=1 holds no job",
                   "the trace covers [1000, 21000] s of trace time", report=True)


def test_the_api_refuses_an_empty_window_of_a_spec_and_of_a_loaded_trace():
    with pytest.raises(ConfigError, match=r"the window start 999999999 s .* holds no whole "
                                          r"job; the trace covers \[0, 3640\] s"):
        stratus.replay(str(SWF), "first-fit", start=999999999)
    tr = make_trace([(1, 0, 0.0, 100.0, 1.0, 1.0), (2, 0, 500.0, 100.0, 1.0, 1.0)])
    # a loaded trace is cut as a file is (it used to ignore start and hours)
    with pytest.raises(ConfigError, match=r"the trace covers \[0, 600\] s"):
        stratus.replay(tr, "first-fit", start=999999999)
    res = stratus.replay(tr, "first-fit", start=400, hours=1, market="on-demand")
    assert res["tasks"] == 1
    with pytest.raises(ConfigError, match="holds no job"):
        stratus.replay(make_trace([]), "first-fit")
    with pytest.raises(ConfigError, match="a loaded trace is one window"):
        stratus.replay(tr, "first-fit", slice=1)


# --- time options have ranges -----------------------------------------------------------------

TRACE = "synthetic:google?scale=0.01"
POOL = ["--reserved", "1", "--reserved-cores", "1", "--reserved-mem-gb", "4"]


@pytest.mark.parametrize("args, needle", [
    (["replay", "--tick", "1e12"], "--tick takes a number of seconds >= 1 and <= 3600"),
    (["replay", "--tick", "0.5"], "--tick takes a number of seconds >= 1 and <= 3600"),
    (["replay", "--hours", "1e9"], "--hours takes a number of hours > 0 and <= 87600"),
    (["replay", "--hours", "0"], "--hours takes a number of hours > 0 and <= 87600"),
    (["replay", "--start", "1e12"], "--start takes a number of seconds >= -1e+11 and <= 1e+11"),
    (["replay", "--spot-start", "1e12"],
     "--spot-start takes a number of seconds >= -1e+11 and <= 1e+11"),
    (["replay", "--warmup-hours", "1e9"], "--warmup-hours takes a number of hours in [0, 87600]"),
    (["replay", "--max-hours", "1e9"], "--max-hours takes a number of hours > 0 and <= 87600"),
    (["replay", "--spinup", "0,1e5"], "--spinup takes LO,HI in seconds with 0 <= LO <= HI <= "
                                      "3600"),
    (["replay", "--faults", "ice:0.5,ice-window:1e12"],
     "ice-window takes a number of seconds > 0 and <= 315360000"),
    (["compare", "--tick", "1e12"], "--tick takes a number of seconds >= 1 and <= 3600"),
    (["waiting", "simulate", *POOL, "--policy", "sww", "--b", "1e12"],
     "--b takes a number of seconds >= 0 and <= 315360000"),
    (["waiting", "simulate", *POOL, "--policy", "ljw", "--t", "1e12"],
     "--t takes a number of seconds >= 0 and <= 315360000"),
    (["advise", "--reserved-cores", "1", "--reserved-mem-gb", "4", "--policy", "njw",
      "--slot", "1"], "--slot takes a number of seconds >= 60 and <= 86400"),
    (["advise", "--commit", "reserved", "--slot", "1e9"],
     "--slot takes a number of seconds >= 60 and <= 86400"),
    (["share", "simulate", "--reserved", "3", "--b", "1e12"],
     "--b takes a number of seconds >= 0 and <= 315360000"),
    (["qos", "sweep", "--dv-fixed-windows", "1,1e9"], "--dv-fixed-windows takes hours in (0, "
                                                      "8760]"),
])
def test_time_options_outside_their_range_are_one_line_naming_it(capsys, args, needle):
    cmd = args[:2] if args[0] in ("waiting", "share", "qos") else args[:1]
    one_line_error(capsys, [*cmd, "--trace", TRACE, *args[len(cmd):]], needle)


def test_analyze_and_live_bound_their_seconds_too(capsys):
    one_line_error(capsys, ["analyze", "--policy", "sww", "--lam", "0.2", "--mu", "0.002",
                            "--servers", "10", "--pf", "1", "--po", "2", "--b", "1e12"],
                   "--b takes a number of seconds >= 0 and <= 315360000")
    one_line_error(capsys, ["live", "--shadow", "--tick", "1e6"],
                   "--tick takes a number of seconds >= 1 and <= 3600")


@pytest.mark.parametrize("kw, needle", [
    ({"tick": 1e12}, r"^tick takes a number of seconds >= 1 and <= 3600, got 1000000000000.0"),
    ({"hours": 1e9}, r"^hours takes a number of hours > 0 and <= 87600"),
    ({"start": float("inf")}, r"^start takes a number of seconds >= -1e\+11 and <= 1e\+11"),
    ({"spinup": "0,1e9"}, r"^spinup takes LO,HI in seconds with 0 <= LO <= HI <= 3600"),
    ({"max_hours": 1e6}, r"^max_hours takes a number of hours > 0 and <= 87600"),
])
def test_the_api_refuses_the_same_ranges(kw, needle):
    tr = make_trace([(1, 0, 0.0, 100.0, 1.0, 1.0)])
    with pytest.raises(ConfigError, match=needle):
        stratus.replay(tr, "first-fit", **kw)


def test_the_engine_config_refuses_a_tick_past_an_hour():
    from stratus.replays import replay
    from stratus.sim.engine import ReplayConfig

    tr = make_trace([(1, 0, 0.0, 100.0, 1.0, 1.0)])
    with pytest.raises(ConfigError, match=r"tick takes a number of seconds > 0 and <= 3600"):
        replay(tr, stratus.app.registry.make_scheduler("first-fit"), ReplayConfig(tick_s=1e12))


# --- a FIFO as an input -------------------------------------------------------------------------

@pytest.fixture
def fifo(tmp_path):
    """FIFOs nobody writes to, and a rescuer: a reader that opens one (the defect) is let go
    after RESCUE_S with an empty read, so a regression fails the test instead of hanging
    the suite. A FIFO refused before it is opened is never opened, and the rescuer, which
    only opens a FIFO a reader holds (O_NONBLOCK), does nothing."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    paths = {}
    for name in ("trace.swf", "prices.csv", "catalog.toml", "sweep.toml"):
        os.mkfifo(tmp_path / name)
        paths[name] = tmp_path / name
    stop = threading.Event()
    opened: list[str] = []

    def rescue():
        while not stop.wait(0.05):
            for name, p in paths.items():
                try:  # succeeds only while a reader has it open
                    fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
                except OSError:
                    continue
                opened.append(name)
                time.sleep(RESCUE_S)
                os.close(fd)  # the reader sees end of file

    th = threading.Thread(target=rescue, daemon=True)
    th.start()
    yield paths
    stop.set()
    th.join()
    assert not opened, f"a reader opened the FIFO(s) {opened}"


def test_a_fifo_given_as_an_input_is_refused_at_once(capsys, tmp_path, fifo):
    """Each of these blocked forever, waiting for a writer."""
    said = "a FIFO (named pipe), not a regular file"
    cache = ["--cache-dir", str(tmp_path / "cache")]
    one_line_error(capsys, ["replay", "--trace", fifo["trace.swf"], *cache], said,
                   f"--trace: {fifo['trace.swf']}")
    one_line_error(capsys, ["replay", "--trace", fifo["trace.swf"], "--format", "swf",
                            "--no-cache"], said)
    one_line_error(capsys, ["replay", "--trace", TRACE, "--spot-prices", fifo["prices.csv"]],
                   said, "--spot-prices")
    one_line_error(capsys, ["replay", "--trace", TRACE, "--catalog", fifo["catalog.toml"]],
                   "--catalog", "not a file")
    one_line_error(capsys, ["sweep", fifo["sweep.toml"]], said)
    one_line_error(capsys, ["traces", "convert", fifo["trace.swf"], "--format", "swf",
                            "-o", tmp_path / "out.parquet"], said)
    one_line_error(capsys, ["traces", "describe", fifo["trace.swf"], *cache], said)


def test_the_library_readers_refuse_a_fifo(fifo):
    from stratus.pricing.spot import load_spot_history
    from stratus.traces.loaders import load_file
    from stratus.traces.spec import load_trace

    for call in (lambda: load_spot_history(fifo["prices.csv"]),
                 lambda: load_file(fifo["trace.swf"], "swf"),
                 lambda: load_trace(str(fifo["trace.swf"]), "swf")):
        with pytest.raises(ConfigError, match="a FIFO"):
            call()


# --- a spot replay outside its price history (issue 35 item 4) ------------------------------------

M4_TYPES = ("m4.large", "m4.xlarge", "m4.2xlarge", "m4.4xlarge", "m4.10xlarge", "m4.16xlarge")


def history_csv(path, stamps=("2017-06-05T00:00:00Z", "2017-06-06T00:00:00Z")):
    lines = ["Timestamp,InstanceType,ProductDescription,AvailabilityZone,SpotPrice"]
    for i, ts in enumerate(stamps):
        lines += [f"{ts},{t},Linux/UNIX,us-west-2a,{0.01 * (k + 1) * (1 + i / 10):.4f}"
                  for k, t in enumerate(M4_TYPES)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_spot_window_wholly_outside_the_history_is_refused(capsys, tmp_path):
    """The history (one day: prices change at 0 and 86400 s) is not cycled: past its end
    the last price holds. --spot-start 1e12 put the whole replay there, silently."""
    hist = history_csv(tmp_path / "h.csv")
    base = ["replay", "--trace", TRACE, "--hours", "1", "--spot-prices", hist,
            "--scheduler", "first-fit"]
    one_line_error(capsys, [*base, "--spot-start", "1e11"],
                   "--spot-start 1e+11: the replay's window, trace time [",
                   "of the spot price history, whose prices change from 0 to 86400 s: wholly "
                   "outside it, every spot price would be the history's last, held; give "
                   "--spot-start in [")
    one_line_error(capsys, [*base, "--spot-start=-1e6"], "the history's first, held")
    # inside, or overlapping it: a replay
    for start in ("0", "86000"):
        assert main_within([str(a) for a in [*base, "--spot-start", start, "--json"]], 60) == 0
        capsys.readouterr()
    # a history without a change lines up with anything
    flat = history_csv(tmp_path / "flat.csv", stamps=("2017-06-05T00:00:00Z",))
    assert main_within([str(a) for a in ["replay", "--trace", TRACE, "--hours", "1",
                                         "--spot-prices", flat, "--spot-start", "1e11",
                                         "--scheduler", "first-fit", "--json"]], 60) == 0
    capsys.readouterr()


@pytest.mark.slow
def test_the_api_and_the_synthetic_history_are_held_to_it_too(capsys):
    # the bundled m4 model spans 90 days
    with pytest.raises(ConfigError, match=r"--spot-start 1e\+10: .* wholly outside it"):
        stratus.replay(TRACE, "first-fit", hours=1, spot_start=1e10)
    one_line_error(capsys, ["waiting", "simulate", "--trace", TRACE, "--hours", "2", *POOL,
                            "--policy", "ljw-spec", "--t", "300", "--speculate-market",
                            "spot", "--spot-start", "1e10"], "wholly outside it")
