"""TwoSigma-like batch workload (Stratus §4.2, "TwoSigma trace": batch analytics and Spark
jobs of a hedge fund on machines of 24 cores / 256 GiB).

Calibration targets, each checked in tests/test_synthetic.py:

- Volume: 100_000 * scale tasks expected per day (a knob, as for the Google-like trace).
- Memory-heavy tasks: >= 80% of tasks have mem_gib > cpu * 4, i.e. are memory-constrained
  on the m4 shapes (Stratus §4.2 (1): "substantial memory footprints"; the machines give
  ~10.7 GiB per core, so requests are drawn around 10 GiB per vCPU).
- More tasks per job than Google (Stratus §4.2 (2)): about half the jobs have < 10 tasks
  (Google-like: ~93%), and the mean and median tasks per job are higher.
- Longer tasks (Stratus §4.2 (3)): median task runtime ~15 min, at least 5x the
  Google-like median (~1 min), with a tail to, but never past, one day.
- Diurnal arrivals with a business-hours peak: a daily sinusoid with peak/trough ratio 3,
  peak at 13:00 trace time (assumed; the papers give no number).
- Harder to predict (Stratus §4.2 and Fig. 3b: JVuPredict estimates are significantly less
  accurate than on Google): a run's runtime varies around its program's with lognormal
  sigma 0.9 (Google-like: 0.4), and 25% of jobs are one-offs with a fresh name (Google-like:
  5%). Tasks of a job stay aligned (sigma 0.2; Stratus §5.4.2: many tasks with similar
  runtimes).
- Priority: 0 for every job (the Stratus paper describes none for this trace).
- Requests: cpu mostly 1..8 vCPU (at most 24, one TwoSigma machine), memory ~10 GiB per
  vCPU, within m4.16xlarge.
"""

from __future__ import annotations

from traces.schema import Trace

from . import common as c
from . import programs
from .programs import ProgramModel, SizeClass

MODEL = ProgramModel(
    name="twosigma",
    classes=(
        # share of jobs, tasks lo..hi, power-law alpha, typical runtime median (s), ln-sd
        SizeClass(0.50, 1, 9, 1.0, 1200.0, 1.5),
        SizeClass(0.48, 10, 99, 1.5, 900.0, 1.4),
        SizeClass(0.02, 100, 500, 2.0, 600.0, 1.2),
    ),
    tasks_per_day=100_000.0,
    programs=800,
    users=150,
    program_zipf=0.7,
    user_zipf=1.0,
    adhoc_share=0.25,
    job_sigma=0.9,
    task_sigma=0.2,
    cpu_median=2.0,
    cpu_sigma=0.6,
    cpu_range=(0.5, 24.0),
    gib_per_cpu_median=10.0,
    gib_per_cpu_sigma=0.6,
    mem_range=(0.5, c.MAX_MEM_GIB),
    priorities=(0,),
    priority_probs=(1.0,),
    peak_to_trough=3.0,
    peak_hour=13.0,
)
DEFAULTS = {"hours": 24.0, "seed": 0, "scale": 1.0, "start_s": 0.0, "whole_jobs": 1}


def generate(hours: float = 24.0, seed: int = 0, scale: float = 1.0,
             start_s: float = 0.0, whole_jobs: int = 1) -> Trace:
    """A TwoSigma-like trace of ``hours`` from ``start_s`` (trace time; 0 = midnight)."""
    params = {"hours": hours, "seed": seed, "scale": scale, "start_s": start_s,
              "whole_jobs": whole_jobs}
    frame, facts = programs.generate(MODEL, hours, seed, scale, start_s, bool(whole_jobs))
    name = c.trace_name("twosigma", params, DEFAULTS)
    return Trace(frame, name=name, meta={"generator": "twosigma", "params": params, **facts})
