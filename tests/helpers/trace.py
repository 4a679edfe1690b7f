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


def replay_recorded(trace, scheduler, **conf):
    """(engine, result) of a replay that keeps the audit logs (``record=True``)."""
    from stratus.replays import engine
    from stratus.sim.config import ReplayConfig

    e = engine(trace, scheduler, ReplayConfig(record=True, **conf))
    return e, e.run()


def first_tick(trace, tick_s: float) -> float:
    """The first scheduling tick of a replay of ``trace``: the first submit, rounded up."""
    import math

    return math.ceil(trace.column("submit_s").min() / tick_s - 1e-9) * tick_s
