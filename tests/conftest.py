import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          print_blob=True)
settings.load_profile("ci")


def make_trace(rows, name="t"):
    """rows: (job, task, submit, runtime, cpu, mem) tuples -> Trace."""
    from stratus.traces.schema import Trace

    df = pd.DataFrame(rows, columns=["job_id", "task_id", "submit_s", "runtime_s", "cpu", "mem_gib"])
    df["user"] = "u"
    df["job_name"] = "j" + df["job_id"].astype(str)
    df["priority"] = 0
    return Trace(df, name=name)


@pytest.fixture(scope="module")
def no_integer_bound():
    """The integer lower bound is most of a small replay's time (a CP-SAT model per time
    slot) and a function of the run segments alone; tests/test_intbound.py and the bound
    tests in tests/test_estimators_metrics.py check it. Modules that replay many times to
    check schedules, costs or decisions skip it (the summary then says why)."""
    import stratus.intbound as ib

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ib, "ortools_missing", lambda: "skipped in this test module")
        yield
