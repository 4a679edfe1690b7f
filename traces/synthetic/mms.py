"""The M/M/s workload of the waiting-policy paper (000 §3): Poisson job arrivals at rate
``lam`` per second, i.i.d. exponential service times with mean ``1/mu``, one task per job,
every task the same size.

Baseline (000 §3, "Empirical Validation"): lam = 0.2 jobs/s, mu = 0.002 /s (mean service
500 s), so the offered load is lam/mu = 100 resources; a task asks for one m5.large
(2 vCPU, 8 GiB). ``scale`` multiplies the arrival rate. There is no diurnal cycle and no
runtime cap (a cap would break the exponential service the model's analysis assumes).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from stratus.base.errors import ConfigError
from stratus.traces.schema import Trace

from . import common as c

DEFAULTS = {"hours": 24.0, "seed": 0, "scale": 1.0, "start_s": 0.0,
            "lam": 0.2, "mu": 0.002, "cpu": 2.0, "mem": 8.0}


def _check(lam: float, mu: float, cpu: float, mem: float) -> None:
    for key, v in (("lam", lam), ("mu", mu)):
        if not (math.isfinite(v) and v > 0):
            raise ConfigError(f"synthetic trace parameter {key!r} must be > 0, got {v!r}")
    for key, v, top in (("cpu", cpu, c.MAX_CPU), ("mem", mem, c.MAX_MEM_GIB)):
        if not (math.isfinite(v) and 0 <= v <= top):
            raise ConfigError(f"synthetic trace parameter {key!r} must be in [0, {top:g}] "
                              f"(the largest m4 shape), got {v!r}")
    if cpu + mem <= 0:
        raise ConfigError("synthetic trace parameters 'cpu' and 'mem' cannot both be 0")


def generate(hours: float = 24.0, seed: int = 0, scale: float = 1.0, start_s: float = 0.0,
             lam: float = 0.2, mu: float = 0.002, cpu: float = 2.0, mem: float = 8.0) -> Trace:
    """An M/M/s job stream over ``hours`` from ``start_s``."""
    c.check_common(hours, seed, scale, start_s)
    _check(lam, mu, cpu, mem)
    rng_arr, rng_svc = c.substreams(seed, 2)
    duration = hours * 3600.0
    c.check_size("mms", lam * scale * duration, duration / c.DAY_S)
    n = rng_arr.poisson(lam * scale * duration)
    submit = start_s + np.sort(rng_arr.uniform(0.0, duration, size=n))
    # exponential() can return exactly 0 (probability ~2**-53); runtimes must be > 0.
    runtime = np.maximum(rng_svc.exponential(1.0 / mu, size=n), 1e-9)
    frame = pd.DataFrame({
        "job_id": np.arange(n, dtype=np.int64),
        "task_id": np.zeros(n, dtype=np.int64),
        "submit_s": submit,
        "runtime_s": runtime,
        "cpu": np.full(n, float(cpu)),
        "mem_gib": np.full(n, float(mem)),
        "user": pd.Categorical.from_codes(np.zeros(n, dtype=np.int64), categories=["mms"]),
        "job_name": pd.Categorical.from_codes(np.zeros(n, dtype=np.int64),
                                              categories=["mms"]),
        "priority": np.zeros(n, dtype=np.int64),
    })
    params = {"hours": hours, "seed": seed, "scale": scale, "start_s": start_s,
              "lam": lam, "mu": mu, "cpu": cpu, "mem": mem}
    meta = {"generator": "mms", "params": params, "unknown_columns": ["priority"], "expected_tasks": lam * scale * duration,
            "offered_load": lam * scale / mu}
    return Trace(frame, name=c.trace_name("mms", params, DEFAULTS), meta=meta)
