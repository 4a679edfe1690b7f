"""The CLI under random misuse (issue 9): argument vectors over every subcommand and option,
with bad numbers (negative, zero, NaN, inf, huge), missing and unreadable files, directories
given as files and outputs inside inputs. Every run ends within a time bound, exits 0 or 2,
and never prints a traceback. Bounded: ``FUZZ_EXAMPLES`` vectors (300, about 15 s; STRATUS_FUZZ_EXAMPLES sets more,
STRATUS_FUZZ_RANDOM=1 explores new seeds)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.app.cli import main
from tests.helpers.cli import main_within
from tests.helpers.paths import FIXTURES

FIX = FIXTURES
FUZZ_EXAMPLES = int(os.environ.get("STRATUS_FUZZ_EXAMPLES", "300"))
SECONDS_PER_RUN = 60  # a run takes < 1 s alone; a 24-hour compare took > 20 s under load
RANDOM = os.environ.get("STRATUS_FUZZ_RANDOM") == "1"  # explore: a new seed each session

BAD_NUMBERS = ["-1", "0", "nan", "inf", "-inf", "1e300", "1e-300", "x", ""]


def _num(*good: str):
    return st.sampled_from([*good, *BAD_NUMBERS])


def _paths(kind: str):
    """Input or output paths, good and bad, as placeholders resolved in the sandbox."""
    bad = ["{box}/missing.file", "{box}", "{box}/dir", "/proc/nope", "{box}/small.swf/x"]
    good = {"trace": ["{box}/small.swf", "{box}/small.parquet", "synthetic:mms?lam=0.002",
                      "synthetic:google?scale=0.005", "synthetic:nosuch", "{box}/tasks.csv",
                      "{box}/empty.swf", "{box}/history.csv"],
            "spot": ["{box}/history.csv", "{box}/history.json", "{box}/history.txt",
                     "{box}/small.swf", "{box}/empty.swf"],
            "out": ["{box}/out/new.{n}", "{box}/small.swf", "{box}/dir/x.{n}",
                    "{box}/existing.png", "{box}/dir", "{box}/out/p.svg", "{box}/out/p.pdf",
                    "{box}/out/p.jpg", "{box}/out/noext"]}[kind]
    return st.sampled_from(good + bad)


TRACE_OPTS = {
    "--format": st.sampled_from(["swf", "canonical", "generic", "nosuch", "generic?x=1",
                                 "google2011", "umass"]),
    "--hours": st.sampled_from(["0.5", "1", "2", "0", "-1", "nan", "inf", "1e9", "1e300"]),
    "--start": _num("0", "600", "1e12"),
    "--slice": _num("0", "3", "99"),
    "--slices": _num("1", "2", "20"),
    "--seed": _num("0", "7", "99999999999999999999999"),
}
REPLAY_OPTS = {
    "--tick": _num("60", "30", "1", "0.001", "1e9"),
    "--market": st.sampled_from(["spot", "on-demand", "moon", "reserved"]),
    "--spot-prices": _paths("spot"),
    "--spot-zone": st.sampled_from(["us-west-2a", "nowhere"]),
    "--spot-start": _num("0", "3600", "-1e12"),
    "--estimator": st.sampled_from(["oracle", "history", "noisy:2", "noisy:0", "noisy:-1",
                                    "noisy:nan", "psychic", "noisy:"]),
    "--warmup-hours": _num("auto", "0", "2", "1e9"),
    "--catalog": st.sampled_from(["m4", "m5", "zz", "aws-2017-cmr", "{box}/catalog.toml",
                                  "{box}/bad-catalog.csv", "{box}/small.swf"]),
    "--drop-oversized": st.just(None),
    "--spinup": st.sampled_from(["30,160", "0,0", "5,1", "-1,5", "nan,1", "0,1e12", "a",
                                 "1", "1,2,3"]),
    "--migration-mbps": _num("160", "1e-12"),
    "--migration-footprint": st.sampled_from(["request", "usage:0.5", "usage:0", "usage:nan",
                                              "usage:2", "usage"]),
    "--max-hours": _num("1", "0.01", "1e9"),
    "--faults": st.sampled_from(["crash:0.5", "crash:2,ice:0.3,ice-window:600", "ice:0.5",
                                 "ice:1", "crash:0", "crash:1e6", "crash:-1", "crash:nan",
                                 "ice:2", "ice:inf", "crash:1,crash:1", "nosuch:1",
                                 "ice:0.1,ice-window:0", "ice-window:60", "", "crash", ",",
                                 "crash:1e308"]),
    "--savings-plan": st.sampled_from(["5", "0.5:0.3", "1:0", "abc", "-1", "0", "5:1",
                                       "nan", "1e308", ":", "", "1:0.5:1"]),
    "--json": st.just(None),
    "--no-progress": st.just(None),
}
SCHEDULERS = ["stratus", "task-per-instance", "first-fit", "stratus-noclear", "nosuch", ""]
COMMANDS = {
    ("replay",): {**TRACE_OPTS, **REPLAY_OPTS, "--scheduler": st.sampled_from(SCHEDULERS),
                  "--save": _paths("out"), "--force": st.just(None)},
    ("compare",): {**TRACE_OPTS, **REPLAY_OPTS,
                   "--schedulers": st.sampled_from(["stratus,first-fit", "nosuch",
                                                    "stratus,stratus", ",", "first-fit"]),
                   "--jobs": st.sampled_from(["1", "1", "0", "-1", "x"])},
    ("sensitivity",): {**TRACE_OPTS, **REPLAY_OPTS,
                       "--h": st.sampled_from(["1", "0.1,10", "0", "-1", "nan", "a", ""]),
                       "--schedulers": st.sampled_from(["first-fit", "stratus,nosuch", ","]),
                       "--jobs": st.sampled_from(["1", "0"])},
    ("estimate",): {**TRACE_OPTS,
                    "--estimator": REPLAY_OPTS["--estimator"],
                    "--warmup-hours": REPLAY_OPTS["--warmup-hours"], "--json": st.just(None)},
    ("schedulers",): {"--json": st.just(None)},
    ("catalogs",): {"--json": st.just(None)},
    ("traces", "convert"): {"--format": TRACE_OPTS["--format"], "-o": _paths("out"),
                            "--force": st.just(None), "--json": st.just(None)},
    ("traces", "describe"): {**TRACE_OPTS, "--plot": _paths("out"), "--force": st.just(None),
                             "--json": st.just(None)},
    ("traces", "formats"): {"--json": st.just(None)},
    ("analyze",): {"--policy": st.sampled_from(["njw", "ajw", "sww", "compound", "nope"]),
                   "--lam": _num("0.2"), "--mu": _num("0.002"),
                   "--servers": st.sampled_from(["108", "optimal", "-3", "x", "1e12", "0"]),
                   "--pf": _num("3.84"), "--po": _num("9.6"), "--b": _num("900"),
                   "--t": _num("180"), "--f-over": _num("0.1", "2"),
                   "--f-under": _num("0.1"), "--json": st.just(None)},
    ("waiting", "simulate"): {**TRACE_OPTS, "--reserved": _num("3", "99999999999"),
                              "--reserved-cores": _num("1", "16", "1e9"),
                              "--reserved-mem-gb": _num("4", "64"),
                              "--reserved-discount": _num("0.6", "1"),
                              "--policy": st.sampled_from(["njw", "ajw-t", "sww", "ljw-spec",
                                                           "x"]),
                              "--b": _num("900"), "--t": _num("180"),
                              "--scheduling": st.sampled_from(["fcfs", "sjf", "lifo"]),
                              "--packing": st.sampled_from(["best-fit", "first-fit", "x"]),
                              "--steady-state": _num("0.1", "0.6"),
                              "--wait-predictor": st.sampled_from(["oracle", "ml", "x"]),
                              "--train-fraction": _num("0.5"),
                              "--estimator": REPLAY_OPTS["--estimator"],
                              "--cloud": st.sampled_from(["smallest-vm", "first-fit", "nosuch"]),
                              "--market": REPLAY_OPTS["--market"], "--json": st.just(None),
                              "--speculate-market": st.sampled_from(["on-demand", "spot", "x"]),
                              "--spot-prices": REPLAY_OPTS["--spot-prices"],
                              "--spot-zone": REPLAY_OPTS["--spot-zone"],
                              "--spot-start": REPLAY_OPTS["--spot-start"],
                              "--reserved-type": st.sampled_from(["m5.4xlarge", "m4.large",
                                                                  "x"]),
                              "--reserved-mix": st.sampled_from(["m5.large:2", "x:1",
                                                                 "m5.large:0"])},
    ("advise",): {**TRACE_OPTS, "--policy": st.sampled_from(["njw", "ajw", "x"]),
                  "--reserved-cores": _num("1", "16"), "--reserved-mem-gb": _num("4"),
                  "--reserved-discount": _num("0.6"), "--slot": _num("3600", "1e-9"),
                  "--reserved-type": st.sampled_from(["m5.xlarge", "x"]),
                  "--plot": _paths("out"), "--force": st.just(None), "--json": st.just(None)},
    ("sweep",): {"--results": st.sampled_from(["{box}/out/res", "{box}", "{box}/small.swf",
                                                "{box}/dir", "/proc/nope"]),
                 "--executor": st.sampled_from(["local", "x", "dask://", "mpi"]),
                 "--workers": st.sampled_from(["1", "0", "-1", "x"]),
                 "--json": st.just(None), "--no-progress": st.just(None)},
    ("report",): {"-o": _paths("out"), "--force": st.just(None), "--json": st.just(None)},
}
QOS_OPTS = {**TRACE_OPTS, "--processors": _num("64", "8", "1e9"),
            "--first-jobs": _num("3", "100"), "--skip": _num("0", "2", "99"),
            "--estimates": st.sampled_from(["exact", "trace", "x"]),
            "--overrun": st.sampled_from(["kill", "extend", "x"]),
            "--slack-factor": _num("5", "1", "0.5"), "--base-rate": _num("0.1"),
            "--charge-basis": st.sampled_from(["actual", "estimate", "x"]),
            "--deadline-basis": st.sampled_from(["estimate", "requested", "x"]),
            "--dup-copies-urgency": st.just(None), "--qops-k": _num("5", "2000"),
            "--oc-tie": st.sampled_from(["reject", "accept", "x"]),
            "--dv-oc-grid": st.sampled_from(["0,0.1", "0,0,1", "a", "-1", ""]),
            "--dv-windows": st.sampled_from(["1,2", "0", "100", "a"]),
            "--dv-wmax": _num("64", "0.5"),
            "--dv-window": st.sampled_from(["auto", "fixed:1", "fixed:0", "fixed:x", "x"]),
            "--dv-replay": st.sampled_from(["nested", "tiling", "x"]),
            "--whatif-start": st.sampled_from(["snapshot", "empty", "x"]),
            "--json": st.just(None)}
COMMANDS[("qos", "run")] = {**QOS_OPTS,
                            "--scheme": st.sampled_from(["qops", "vqops", "dvqops", "x"]),
                            "--oc": _num("0", "0.1"), "--urgent-frac": _num("0.5", "2"),
                            "--urgent-cost": _num("10", "2"), "--dup-frac": _num("0.5", "21"),
                            "--save": _paths("out"), "--force": st.just(None)}
COMMANDS[("qos", "sweep")] = {**QOS_OPTS,
                              "--schemes": st.sampled_from(["qops,vqops", "dvqops", "x",
                                                            "qops,qops"]),
                              "--ocs": st.sampled_from(["0,0.1", "-1", "a"]),
                              "--urgent-fracs": st.sampled_from(["0.5", "0.2,0.8", "2"]),
                              "--urgent-costs": st.sampled_from(["10", "2,10", "0"]),
                              "--dup-fracs": st.sampled_from(["0", "0,1", "21", "nan"]),
                              "--dv-fixed-windows": st.sampled_from(["1,4", "0", "x"]),
                              "--plot": _paths("out"), "--force": st.just(None)}
SHARE_OPTS = {**TRACE_OPTS,
              "--policy": st.sampled_from(["lift-and-shift", "burst-nowait", "burst-wait", "x"]),
              "--reserved": st.sampled_from(["0", "4", "optimal", "-1", "x", "99999999999"]),
              "--grid": st.sampled_from(["0:8:4", "0,2", "8:0:1", "0:8:0", "x"]),
              "--mode": st.sampled_from(["auto", "pool", "node", "x"]),
              "--vm": st.sampled_from(["m5.16xlarge", "m5.large", "m4.large"]),
              "--vm-cores": _num("1", "4"), "--reserved-ratio": _num("0.6", "0.4"),
              "--od-sizing": st.sampled_from(["auto", "exact", "m5", "x"]),
              "--b": _num("86400", "60"), "--t": _num("180"),
              "--short-jobs": st.sampled_from(["reserved-first", "ondemand", "x"]),
              "--placement": st.sampled_from(["best-fit", "first-fit", "x"]),
              "--pricing": st.sampled_from(["socialist", "capitalist", "x"]),
              "--wait-metric": st.sampled_from(["ratio-of-means", "mean-of-ratios", "x"]),
              "--plot": _paths("out"), "--force": st.just(None), "--json": st.just(None)}
COMMANDS[("share", "simulate")] = {**SHARE_OPTS, "--save": _paths("out"),
                                   "--steady-state": _num("0.1", "0.6"),
                                   "--strict": st.just(None)}
COMMANDS[("share", "sweep")] = {**{k: v for k, v in SHARE_OPTS.items() if k != "--grid"},
                                "--reserved": st.sampled_from(["0:8:4", "0,4", "x", "-1:4:1"]),
                                "--policies": st.sampled_from(["burst-wait,burst-nowait",
                                                               "nope", "burst-wait,burst-wait"]),
                                "--periods": _num("1", "2", "101")}
COMMANDS[("share", "defect")] = {**SHARE_OPTS,
                                 "--thetas": st.sampled_from(["1,inf", "0", "-1", "nan", "a"]),
                                 "--defect-on-price": st.just(None)}
COMMANDS[("share", "solo")] = {**SHARE_OPTS,
                               "--ks": st.sampled_from(["0,1,2", "0", "1.5", "-1", "x"]),
                               "--burst-jobs": _num("10", "1")}
# nothing listens on 127.0.0.1:1: a live run that gets past its checks fails its first
# read (one attempt) and must say so in one line
COMMANDS[("live",)] = {
    "--shadow": st.just(None), "--apply": st.just(None),
    "--kube-url": st.sampled_from(["http://127.0.0.1:1", "", "x"]),
    "--kubeconfig": _paths("spot"), "--context": st.sampled_from(["c", ""]),
    "--market": st.sampled_from(["spot", "on-demand", "reserved", ""]),
    "--spot-prices": _paths("spot"), "--catalog": st.sampled_from(["m4", "m5", "nosuch"]),
    "--tick": _num("60", "1"), "--ticks": st.sampled_from(["1", "0", "x", "-1"]),
    "--image-id": st.sampled_from(["ami-1", ""]),
    "--region": st.sampled_from(["us-east-1", ""]),
    "--aws-endpoint": st.sampled_from(["http://127.0.0.1:1", "not a url"]),
    "--estimator": st.sampled_from(["annotation", "history", "oracle"]),
    "--scheduler": st.sampled_from(SCHEDULERS), "--json": st.just(None)}
POSITIONAL = {("traces", "convert"), ("traces", "describe")}
# the first argument of sweep (a config) and of report (a results directory)
FIRST = {("sweep",): ["{box}/sweep.toml", "{box}/bad.toml", "{box}/missing.toml", "{box}",
                      "{box}/small.swf"],
         ("report",): ["{box}/res", "{box}", "{box}/missing", "{box}/small.swf"]}
SWEEP = """command = "waiting"
results = "{results}"
[[traces]]
spec = "synthetic:mms?hours=1&cpu=1&mem=4"
[[grid]]
policy = ["njw", "ajw-t"]
[options]
reserved = 90
reserved_cores = 1
reserved_mem_gb = 4
b = 900
"""


@st.composite
def argv(draw):
    cmd = draw(st.sampled_from(sorted(COMMANDS)))
    opts = COMMANDS[cmd]
    out = list(cmd)
    if cmd in POSITIONAL:
        out.append(draw(_paths("trace")))
    elif cmd in FIRST:
        out.append(draw(st.sampled_from(FIRST[cmd])))
        if cmd == ("sweep",):
            out += ["--workers", "1"]  # a process pool is the slow path
    elif "--hours" in opts:
        out += ["--trace", draw(_paths("trace"))]
    if cmd == ("waiting", "simulate") or cmd == ("advise",):  # their required options
        out += ["--reserved-cores", "4", "--reserved-mem-gb", "16", "--policy", "njw"]
        if cmd == ("waiting", "simulate"):
            out += ["--reserved", "2"]
    if cmd == ("share", "simulate"):
        out += ["--reserved", "4"]
    if cmd == ("analyze",):
        out += ["--policy", "njw", "--lam", "0.2", "--mu", "0.002", "--servers", "100",
                "--pf", "3.84", "--po", "9.6"]
    if "--jobs" in opts:
        out += ["--jobs", "1"]  # worker pools are the slow path: usually one process
    if cmd == ("live",):
        out += ["--api-attempts", "1"]  # no back-off against a port nobody listens on
    names = draw(st.lists(st.sampled_from(sorted(opts)), max_size=6, unique=True))
    if "--trace" in out and "--hours" not in names and draw(st.booleans()):
        names.append("--hours")
    for name in names:
        value = draw(opts[name])
        out += [name] if value is None else [name, value]
    if draw(st.integers(0, 9)) == 0:  # a stray or missing argument
        out.insert(draw(st.integers(0, len(out))), draw(st.sampled_from(
            ["--nosuch", "-x", "replay", "--hours"])))
    n = draw(st.integers(0, 999))
    return [a.replace("{n}", f"{n}.png" if "plot" in out else f"{n}.parquet") for a in out]


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    """The sandbox: copies of small inputs, so no fuzzed output can land in the repository.
    A new directory (it was $TMPDIR/stratus-fuzz-PID, which a killed run left behind for a
    later run with the same pid to find, hidden files and all)."""
    from stratus.traces.spec import TraceSource

    BOX = tmp_path_factory.mktemp("fuzz")
    shutil.copy(FIX / "swf" / "small.swf", BOX / "small.swf")
    shutil.copy(FIX / "generic" / "tasks.csv", BOX / "tasks.csv")
    for f in ("history.csv", "history.json", "history.txt"):
        shutil.copy(FIX / "spot" / f, BOX / f)
    TraceSource(str(BOX / "small.swf")).full().to_parquet(BOX / "small.parquet")
    (BOX / "empty.swf").write_text("")
    (BOX / "dir").mkdir(exist_ok=True)
    (BOX / "out").mkdir(exist_ok=True)
    (BOX / "existing.png").write_bytes(b"user's")
    (BOX / "sweep.toml").write_text(SWEEP.format(results=BOX / "out" / "res"))
    (BOX / "bad.toml").write_text("command = 'waiting'\nresults = [\n")
    (BOX / "catalog.toml").write_text(  # a user's own 3-family catalog
        "".join(f"[[types]]\nname = '{f}.x'\nvcpu = 64\nmem_gib = {m}\nondemand_hourly = {p}\n"
                for f, m, p in (("c", 128, 2.7), ("m", 256, 3.2), ("r", 512, 4.3))))
    (BOX / "bad-catalog.csv").write_text("name,vcpu,mem_gib,ondemand_hourly\nm.x,4,x,1\n")
    assert main(["sweep", str(BOX / "sweep.toml"), "--results", str(BOX / "res"),
                 "--workers", "1", "--no-progress"]) == 0
    yield BOX
    shutil.rmtree(BOX, ignore_errors=True)


def _inputs_intact(box: Path) -> None:
    assert (box / "small.swf").read_bytes() == (FIX / "swf" / "small.swf").read_bytes()
    assert (box / "existing.png").read_bytes() == b"user's"
    assert not [p for p in box.rglob(".*") if p.is_file()], "a temporary file was left"


# the search is a function the test calls, so that the test can check what the whole
# search saw once it is over (a second test reading it would depend on running after it,
# in the same xdist worker)
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=not RANDOM,
          suppress_health_check=[HealthCheck.too_slow])
@given(args=argv())
def _one_vector(box, capsys, seen, args):
    args = [a.replace("{box}", str(box)) for a in args]
    code = main_within(args, SECONDS_PER_RUN)
    cap = capsys.readouterr()
    assert code in (0, 2), (args, code, cap.err)
    assert "Traceback" not in cap.err, (args, cap.err)
    seen["vectors"].append(args)
    seen["ok"] += code == 0
    if code == 2:
        lines = [ln for ln in cap.err.splitlines() if ln.startswith("stratus: error:")]
        assert len(lines) == 1 and cap.err.rstrip("\n").endswith(lines[0]), (args, cap.err)
        assert cap.out == "", (args, cap.out)
        seen["errors"].add(re.sub(r"\d+", "N", lines[0].replace(str(box), "BOX")))
    # a file named as the output with --force, and not an input of this run, may be
    # replaced: that is what --force asks; put the sandbox's copy back
    if "--force" in args and code == 0:
        outs = {args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-o", "--plot", "--save")}
        ins = {args[i + 1] for i, a in enumerate(args[:-1]) if a in ("--trace", "--spot-prices")}
        if len(args) > 2 and args[0] == "traces":
            ins.add(args[2])
        if str(box / "small.swf") in outs - ins:
            shutil.copy(FIX / "swf" / "small.swf", box / "small.swf")
        if str(box / "existing.png") in outs - ins:
            (box / "existing.png").write_bytes(b"user's")
    _inputs_intact(box)
    for p in (box / "out").iterdir():  # outputs do not pile up into "already exists"
        shutil.rmtree(p) if p.is_dir() else p.unlink()


@pytest.mark.slow
def test_every_argument_vector_ends_with_0_or_2_and_no_traceback(box, capsys):
    """Every vector ends with exit 0 or 2 and no traceback; and the fuzz is not a string of
    one repeated error."""
    seen: dict = {"vectors": [], "errors": set(), "ok": 0}
    _one_vector(box, capsys, seen)
    with capsys.disabled():
        print(f"\nCLI fuzz: {len(seen['vectors'])} argument vectors, "
              f"{len(seen['errors'])} distinct error messages, {seen['ok']} ran to exit 0")
    assert len(seen["errors"]) >= min(20, len(seen["vectors"]) // 4)


# --- scheduler names with options (issue 35) -------------------------------------------------
SCHEDULER_EXAMPLES = int(os.environ.get("STRATUS_FUZZ_SCHEDULER_EXAMPLES", "40"))


@st.composite
def scheduler_argv(draw):
    """A replay of a small trace by a scheduler named with random options and parameters
    (tests/helpers/scheduler_options.py); with the key of the one bad item, or None."""
    from tests.helpers.scheduler_options import option_strings

    name, bad = draw(option_strings())
    args = ["replay", "--trace", draw(st.sampled_from(["{box}/small.swf",
                                                       "synthetic:google?scale=0.005"])),
            "--hours", "1", "--scheduler", name]
    args += draw(st.sampled_from([[], ["--market", "on-demand"], ["--json"]]))
    return args, bad


@pytest.mark.slow
@settings(max_examples=SCHEDULER_EXAMPLES, deadline=None, derandomize=not RANDOM,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=scheduler_argv())
def test_a_scheduler_named_with_random_options_runs_or_is_one_line_naming_the_bad_one(
        box, capsys, case):
    args, bad = case
    args = [a.replace("{box}", str(box)) for a in args]
    code = main_within(args, SECONDS_PER_RUN)
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err, (args, cap.err)
    if bad is None:
        assert code == 0, (args, cap.err)
    else:
        lines = cap.err.splitlines()
        assert code == 2 and cap.out == "", (args, code, cap.err)
        assert len(lines) == 1 and lines[0].startswith("stratus: error:") and bad in lines[0], \
            (args, cap.err)
