"""Google-2011-like batch workload (Stratus §4.2, "Google trace"), requests scaled to the
largest m4 shape (64 vCPU, 256 GiB) as Stratus does.

Calibration targets, each checked in tests/traces/test_synthetic.py:

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

from stratus.traces.schema import Trace

from . import common as c
from . import gpus, programs
from .programs import ProgramModel, SizeClass

#: Google 2011 priorities by band (free 0-1, middle 2-8, production 9-11) and the split
#: of tasks within each band, measured on the real 19-hour window.
PRIORITIES = (0, 1, 2, 4, 6, 8, 9)
_WITHIN = ((0.70, 0.30), (0.92, 0.06, 0.002, 0.018), (1.0,))


def _bands(free: float, middle: float, production: float) -> tuple[float, ...]:
    """Probabilities over PRIORITIES from the shares of the three bands."""
    return tuple(share * w for share, ws in zip((free, middle, production), _WITHIN)
                 for w in ws)


MODEL = ProgramModel(
    name="google",
    classes=(
        # share of jobs, tasks lo..hi, power-law alpha, runtime median (s), ln-sd below and
        # above the median, then per-class requests, alignment, priorities and one-offs
        SizeClass(0.799, 1, 1, 0.0, 118.0, 1.17, runtime_sigma_hi=1.8, cpu_rt_corr=0.38,
                  cpu_median=0.8, cpu_sigma=1.25, tiny_cpu_share=0.146,
                  mem_median_gib=1.99, mem_sigma=1.29, cpu_mem_corr=0.76,
                  priority_probs=_bands(0.497, 0.408, 0.095), adhoc_share=0.19),
        SizeClass(0.0535, 2, 9, 1.3, 132.0, 0.54, runtime_sigma_hi=1.4, cpu_rt_corr=0.32,
                  cpu_median=0.6, cpu_sigma=0.9,
                  mem_median_gib=0.80, mem_sigma=1.15, cpu_mem_corr=0.31,
                  task_sigma_median=0.01, task_sigma_spread=2.9,
                  priority_probs=_bands(0.281, 0.702, 0.017), adhoc_share=0.21),
        SizeClass(0.101, 10, 99, 1.65, 230.0, 0.94, runtime_sigma_hi=1.8, cpu_rt_corr=0.07,
                  cpu_median=0.8, cpu_sigma=1.33,
                  mem_median_gib=1.59, mem_sigma=0.71, cpu_mem_corr=0.49,
                  task_sigma_median=0.038, task_sigma_spread=2.4,
                  priority_probs=_bands(0.231, 0.750, 0.019), adhoc_share=0.23),
        SizeClass(0.0391, 100, 999, 2.3, 250.0, 0.95, runtime_sigma_hi=1.95, cpu_rt_corr=0.05,
                  cpu_median=0.8, cpu_sigma=1.33,
                  mem_median_gib=2.95, mem_sigma=0.66, cpu_mem_corr=0.36,
                  task_sigma_median=0.185, task_sigma_spread=1.2,
                  priority_probs=_bands(0.291, 0.703, 0.006), adhoc_share=0.53),
        SizeClass(0.00755, 1000, 11000, 3.0, 850.0, 1.0, runtime_sigma_hi=1.85,
                  cpu_rt_corr=0.39, size_rt_corr=0.4, size_cpu_corr=0.21,
                  cpu_median=1.6, cpu_sigma=0.7,
                  mem_median_gib=8.14, mem_sigma=0.43, cpu_mem_corr=0.17,
                  task_sigma_median=0.29, task_sigma_spread=0.81,
                  priority_probs=_bands(0.229, 0.771, 0.0), adhoc_share=0.62),
    ),
    tasks_per_day=530_000.0,
    programs=1500,
    users=150,
    program_zipf=0.8,
    user_zipf=1.0,
    adhoc_share=0.19,
    job_sigma=0.3,
    task_sigma=0.0,
    cpu_median=0.8,
    cpu_sigma=1.0,
    cpu_range=(0.025, 32.0),
    gib_per_cpu_median=2.5,
    gib_per_cpu_sigma=1.0,
    mem_range=(0.01, 64.0),
    priorities=PRIORITIES,
    priority_probs=_bands(0.26, 0.733, 0.007),
    peak_to_trough=1.5,
    peak_hour=14.0,
    cpu_grid=0.2,
    hourly_sigma=0.15,
    batch_share=0.25,
    task_sigma_hi_ratio=0.35,
)

DEFAULTS = {"hours": 24.0, "seed": 0, "scale": 1.0, "start_s": 0.0, "whole_jobs": 1,
            "gpu_share": 0.0}


def generate(hours: float = 24.0, seed: int = 0, scale: float = 1.0,
             start_s: float = 0.0, whole_jobs: int = 1, gpu_share: float = 0.0) -> Trace:
    """A Google-like trace of ``hours`` from ``start_s`` (trace time; 0 = midnight)."""
    params = {"hours": hours, "seed": seed, "scale": scale, "start_s": start_s,
              "whole_jobs": whole_jobs}
    gpus.check_share("google", gpu_share)
    frame, facts = programs.generate(MODEL, hours, seed, scale, start_s, bool(whole_jobs))
    if gpu_share:  # GPU jobs (traces/synthetic/gpus.py); none: the trace as it was
        params["gpu_share"] = gpu_share
        frame = gpus.add_gpu_jobs(frame, gpu_share, seed)
    name = c.trace_name("google", params, DEFAULTS)
    return Trace(frame, name=name, meta={"generator": "google", "params": params, **facts})
