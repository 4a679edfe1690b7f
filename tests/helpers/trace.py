"""Small traces written out row by row."""

from __future__ import annotations

import pandas as pd


def make_trace(rows, name="t"):
    """rows: (job, task, submit, runtime, cpu, mem) tuples -> Trace."""
    from stratus.traces.schema import Trace

    df = pd.DataFrame(rows, columns=["job_id", "task_id", "submit_s", "runtime_s", "cpu", "mem_gib"])
    df["user"] = "u"
    df["job_name"] = "j" + df["job_id"].astype(str)
    df["priority"] = 0
    return Trace(df, name=name)
