"""Fixtures for the whole suite (helper functions and classes: tests/helpers)."""

import os
import signal

import pytest
from hypothesis import HealthCheck, settings

# The trace cache (traces/cache.py) is off for the suite and the processes it starts: no
# test writes into the user's cache, and a test that patches a loader sees it run.
# tests/traces/test_cache.py turns it on in temporary directories (--cache-dir beats this).
os.environ["STRATUS_NO_CACHE"] = "1"
os.environ.pop("STRATUS_CACHE_DIR", None)

# Ctrl-C as at a terminal, in this process and the ones it starts: a shell runs a job it
# puts in the background (`make test &`, a CI step without job control) with SIGINT
# ignored, every child inherits that, and the tests that interrupt a replay, a solve or a
# query would see nothing happen
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          print_blob=True)
settings.load_profile("ci")


@pytest.fixture(scope="module")
def no_integer_bound():
    """The integer lower bound is most of a small replay's time (a CP-SAT model per time
    slot) and a function of the run segments alone; tests/core/test_intbound.py and the bound
    tests in tests/core/test_estimators_metrics.py check it. Modules that replay many times to
    check schedules, costs or decisions skip it (the summary then says why)."""
    import stratus.sim.intbound as ib

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ib, "ortools_missing", lambda: "skipped in this test module")
        yield


@pytest.fixture(scope="session")
def spawner_lock(tmp_path_factory):
    """``with spawner_lock():`` around work that starts worker processes (compare --jobs 2,
    sweeps on a pool or a dask LocalCluster, the browser) or signals a child on a timer:
    under pytest-xdist no two such blocks run at once, so that they never compete with
    each other for the two cores of a CI machine (the other worker goes on with its own
    tests meanwhile). One process (no xdist): nothing to wait for. Re-entrant."""
    import contextlib
    import os

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield contextlib.nullcontext
        return
    import fcntl

    # the session's base directory, which its workers share (each has a popen-gwN in it)
    path = tmp_path_factory.getbasetemp().parent / "spawner.lock"
    depth = [0]

    @contextlib.contextmanager
    def held():
        with open(path, "a") as fh:
            if depth[0] == 0:
                fcntl.flock(fh, fcntl.LOCK_EX)
            depth[0] += 1
            try:
                yield
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    fcntl.flock(fh, fcntl.LOCK_UN)

    yield held


@pytest.fixture
def one_spawner_at_a_time(spawner_lock):
    """The whole test inside ``spawner_lock``."""
    with spawner_lock():
        yield



def pytest_collection_modifyitems(config, items):
    """The tests marked slow first, each group in its collected order: under xdist the last
    tests left to share out are the short ones, so no worker waits idle at the end for
    another finishing a long test (the 19-hour window's load, a golden replay)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)

