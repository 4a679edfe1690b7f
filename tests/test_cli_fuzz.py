"""The CLI under random misuse (issue 9): argument vectors over every subcommand and option,
with bad numbers (negative, zero, NaN, inf, huge), missing and unreadable files, directories
given as files and outputs inside inputs. Every run ends within a time bound, exits 0 or 2,
and never prints a traceback. Bounded: ``FUZZ_EXAMPLES`` vectors (600, about 10 s; STRATUS_FUZZ_RANDOM=1 explores new seeds)."""

from __future__ import annotations

import os
import re
import shutil
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.app.cli import main

FIX = Path(__file__).parent / "fixtures"
FUZZ_EXAMPLES = int(os.environ.get("STRATUS_FUZZ_EXAMPLES", "300"))
SECONDS_PER_RUN = 20
SEEN: dict = {"vectors": [], "errors": set(), "ok": 0}
RANDOM = os.environ.get("STRATUS_FUZZ_RANDOM") == "1"  # explore: a new seed each session

# the sandbox: copies of small inputs, so no fuzzed output can land in the repository
BOX = Path(os.environ.get("TMPDIR", "/tmp")) / f"stratus-fuzz-{os.getpid()}"

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
    "--catalog": st.sampled_from(["m4", "m5", "zz"]),
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
                              "--market": REPLAY_OPTS["--market"], "--json": st.just(None)},
    ("advise",): {**TRACE_OPTS, "--policy": st.sampled_from(["njw", "ajw", "x"]),
                  "--reserved-cores": _num("1", "16"), "--reserved-mem-gb": _num("4"),
                  "--reserved-discount": _num("0.6"), "--slot": _num("3600", "1e-9"),
                  "--plot": _paths("out"), "--force": st.just(None), "--json": st.just(None)},
}
POSITIONAL = {("traces", "convert"), ("traces", "describe")}


@st.composite
def argv(draw):
    cmd = draw(st.sampled_from(sorted(COMMANDS)))
    opts = COMMANDS[cmd]
    out = list(cmd)
    if cmd in POSITIONAL:
        out.append(draw(_paths("trace")))
    elif "--hours" in opts:
        out += ["--trace", draw(_paths("trace"))]
    if cmd == ("waiting", "simulate") or cmd == ("advise",):  # their required options
        out += ["--reserved-cores", "4", "--reserved-mem-gb", "16", "--policy", "njw"]
        if cmd == ("waiting", "simulate"):
            out += ["--reserved", "2"]
    if cmd == ("analyze",):
        out += ["--policy", "njw", "--lam", "0.2", "--mu", "0.002", "--servers", "100",
                "--pf", "3.84", "--po", "9.6"]
    if "--jobs" in opts:
        out += ["--jobs", "1"]  # worker pools are the slow path: usually one process
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
def box():
    from traces.spec import TraceSource

    BOX.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIX / "swf" / "small.swf", BOX / "small.swf")
    shutil.copy(FIX / "generic" / "tasks.csv", BOX / "tasks.csv")
    for f in ("history.csv", "history.json", "history.txt"):
        shutil.copy(FIX / "spot" / f, BOX / f)
    TraceSource(str(BOX / "small.swf")).full().to_parquet(BOX / "small.parquet")
    (BOX / "empty.swf").write_text("")
    (BOX / "dir").mkdir(exist_ok=True)
    (BOX / "out").mkdir(exist_ok=True)
    (BOX / "existing.png").write_bytes(b"user's")
    yield BOX
    shutil.rmtree(BOX, ignore_errors=True)


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def _inputs_intact(box: Path) -> None:
    assert (box / "small.swf").read_bytes() == (FIX / "swf" / "small.swf").read_bytes()
    assert (box / "existing.png").read_bytes() == b"user's"
    assert not [p for p in box.rglob(".*") if p.is_file()], "a temporary file was left"


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=not RANDOM,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(args=argv())
def test_every_argument_vector_ends_with_0_or_2_and_no_traceback(box, capsys, args):
    args = [a.replace("{box}", str(box)) for a in args]
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(SECONDS_PER_RUN)
    try:
        code = main(args)
    except _Timeout:
        pytest.fail(f"did not end within {SECONDS_PER_RUN} s: {args}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    cap = capsys.readouterr()
    assert code in (0, 2), (args, code, cap.err)
    assert "Traceback" not in cap.err, (args, cap.err)
    SEEN["vectors"].append(args)
    SEEN["ok"] += code == 0
    if code == 2:
        lines = [ln for ln in cap.err.splitlines() if ln.startswith("stratus: error:")]
        assert len(lines) == 1 and cap.err.rstrip("\n").endswith(lines[0]), (args, cap.err)
        assert cap.out == "", (args, cap.out)
        SEEN["errors"].add(re.sub(r"\d+", "N", lines[0].replace(str(box), "BOX")))
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


def test_fuzz_saw_many_distinct_errors():
    """The fuzz is not a string of one repeated error (runs after it, in file order)."""
    if not SEEN["vectors"]:
        pytest.skip("the fuzz did not run in this session")
    print(f"\nCLI fuzz: {len(SEEN['vectors'])} argument vectors, "
          f"{len(SEEN['errors'])} distinct error messages, {SEEN['ok']} ran to exit 0")
    assert len(SEEN["errors"]) >= min(20, len(SEEN["vectors"]) // 4)
