import sys
from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          print_blob=True)
settings.load_profile("ci")


def make_trace(rows, name="t"):
    """rows: (job, task, submit, runtime, cpu, mem) tuples -> Trace."""
    from traces.schema import Trace

    df = pd.DataFrame(rows, columns=["job_id", "task_id", "submit_s", "runtime_s", "cpu", "mem_gib"])
    df["user"] = "u"
    df["job_name"] = "j" + df["job_id"].astype(str)
    df["priority"] = 0
    return Trace(df, name=name)
