"""GPU jobs in a synthetic trace: ``gpu_share`` of the jobs ask for GPUs (option of the
google and twosigma generators; default 0, which leaves a trace as it was, bit for bit).

A GPU job's tasks each request 1, 2, 4 or 8 GPUs (probabilities 0.5, 0.25, 0.15, 0.1) and,
per GPU, the CPU and memory of one of three common GPU instance shapes, a little under so
that a task fits the instance: 3.5 vCPU / 14 GiB (g5.xlarge: 4 / 16 per GPU), 7 / 28
(g5.2xlarge: 8 / 32) or 7 / 56 (p3.2xlarge: 8 / 61). These shares are assumed, not
measured on a trace (no Stratus trace has GPUs); runtimes, arrivals and everything else
are the generator's own. Draws come from their own random stream, so the jobs and the
CPU-only requests are those of the trace without GPUs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from stratus.base.errors import ConfigError

GPU_COUNTS = np.array([1, 2, 4, 8])
GPU_COUNT_P = np.array([0.5, 0.25, 0.15, 0.1])
PER_GPU = np.array([(3.5, 14.0), (7.0, 28.0), (7.0, 56.0)])  # (vCPU, GiB) per GPU


def check_share(generator: str, share: float) -> None:
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"synthetic:{generator}: parameter 'gpu_share' must be in [0, 1], "
                          f"got {share:g}")


def add_gpu_jobs(frame: pd.DataFrame, share: float, seed: int) -> pd.DataFrame:
    """``frame`` with a ``gpus`` column: each job a GPU job with probability ``share``,
    its tasks' cpu and mem_gib replaced by the GPU shape's."""
    rng = np.random.default_rng([seed, 0x69B0])
    jobs, inv = np.unique(frame["job_id"].to_numpy(), return_inverse=True)
    is_gpu = rng.random(jobs.size) < share
    count = rng.choice(GPU_COUNTS, size=jobs.size, p=GPU_COUNT_P)
    shape = PER_GPU[rng.integers(0, len(PER_GPU), size=jobs.size)]
    out = frame.copy()
    on = is_gpu[inv]
    g = np.where(on, count[inv], 0)
    out["cpu"] = np.where(on, g * shape[inv, 0], out["cpu"].to_numpy())
    out["mem_gib"] = np.where(on, g * shape[inv, 1], out["mem_gib"].to_numpy())
    out["gpus"] = g.astype(np.float64)
    return out
