"""Google-2011-like batch workload (Stratus §4.2, "Google trace"), requests scaled to the
largest m4 shape (64 vCPU, 256 GiB) as Stratus does.

Calibration targets, each checked in tests/test_synthetic.py:

- Volume: 100_000 * scale tasks expected per day (a knob, not from the trace: scale
  0.1..10 spans ~10k..~1M tasks a day).
- CPU-heavy tasks: >= 80% of tasks have cpu * 4 >= mem_gib, i.e. are CPU-constrained on
  the 4-GiB-per-vCPU m4 shapes (Stratus §4.2 (1): "tasks are typically CPU-heavy").
- Few tasks per job: > 75% of jobs have < 10 tasks (Stratus §4.2 (2)); a tail of jobs with
  hundreds to 3000 tasks holds a large share of the tasks.
- Short tasks: > 50% of tasks run < 120 s (Stratus §4.2 (3): "most shorter than two
  minutes"), with a tail: >= 0.5% of tasks run > 1 h and none > 1 day (Stratus §4.2 keeps
  only jobs inside a 1-day window).
- Short jobs: ~65% of jobs (job runtime = its longest task) run < 6 min (paper 003 §2,
  citing an analysis of the Google trace).
- Diurnal arrivals: job arrival rate is a daily sinusoid with peak/trough ratio 2, peak at
  14:00 trace time (assumed; the Google trace shows a daily cycle, its size is not in the
  papers).
- Jobs: tasks of a job share submit time and request; task runtime = job runtime times a
  lognormal factor with sigma 0.2.
- Recurring programs: 1500 programs and 300 users at scale 1 (users Zipf-like, exponent
  1); a run's runtime is its program's times a lognormal factor with sigma 0.4, and 5% of
  jobs are one-offs. This gives a history-based estimator (JVuPredict, Stratus §3.4)
  moderate errors, smaller than on the TwoSigma-like trace (Stratus Fig. 3b).
- Priority: integers 0..11 as in the Google trace, mostly the low (batch) bands (the mix
  is assumed).
- Requests: cpu mostly 0.1..4 vCPU (lognormal over programs, median 0.5), memory mostly
  < 8 GiB (1.5 GiB per vCPU median, ln-sd 0.6: ~5% of programs ask > 4 GiB per vCPU); all
  within m4.16xlarge. (Google's requests are normalised to its largest machine; Stratus
  §4.2 rescales them to 64 vCPU / 256 GiB, which this mimics.)
"""

from __future__ import annotations

from traces.schema import Trace

from . import common as c
from . import programs
from .programs import ProgramModel, SizeClass

MODEL = ProgramModel(
    name="google",
    classes=(
        # share of jobs, tasks lo..hi, power-law alpha, typical runtime median (s), ln-sd
        SizeClass(0.934, 1, 9, 2.0, 150.0, 2.2),
        SizeClass(0.063, 10, 99, 1.5, 40.0, 1.5),
        SizeClass(0.0015, 100, 999, 2.0, 30.0, 1.4),
        SizeClass(0.0001, 1000, 3000, 2.0, 30.0, 1.2),
    ),
    tasks_per_day=100_000.0,
    programs=1500,
    users=300,
    program_zipf=0.7,
    user_zipf=1.0,
    adhoc_share=0.05,
    job_sigma=0.4,
    task_sigma=0.2,
    cpu_median=0.5,
    cpu_sigma=1.0,
    cpu_range=(0.025, 32.0),
    gib_per_cpu_median=1.5,
    gib_per_cpu_sigma=0.6,
    mem_range=(0.01, c.MAX_MEM_GIB),
    priorities=(0, 1, 2, 4, 6, 8, 9, 10, 11),
    priority_probs=(0.40, 0.12, 0.10, 0.20, 0.05, 0.03, 0.08, 0.015, 0.005),
    peak_to_trough=2.0,
    peak_hour=14.0,
)
DEFAULTS = {"hours": 24.0, "seed": 0, "scale": 1.0, "start_s": 0.0}


def generate(hours: float = 24.0, seed: int = 0, scale: float = 1.0,
             start_s: float = 0.0) -> Trace:
    """A Google-like trace of ``hours`` from ``start_s`` (trace time; 0 = midnight)."""
    params = {"hours": hours, "seed": seed, "scale": scale, "start_s": start_s}
    frame, facts = programs.generate(MODEL, hours, seed, scale, start_s)
    name = c.trace_name("google", params, DEFAULTS)
    return Trace(frame, name=name, meta={"generator": "google", "params": params, **facts})
