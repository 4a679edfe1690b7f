"""TwoSigma-like batch workload (Stratus §4.2, "TwoSigma trace"), one day of the traced
cluster at scale 1.

Facts, each checked in tests/traces/test_synthetic.py:

- Stratus §4.2: 3.2 million jobs over nine months (Jan.-Sept. 2016, 274 days), so 11,680
  jobs a day at scale 1 (``scale`` multiplies it); two clusters of 1313 machines in all, 24
  cores and 256 GiB each; batch analytics and Spark, no long-running services; (1) tasks
  have substantial memory footprints: >= 80% are memory-constrained on the m4 shapes (4 GiB
  per vCPU); (2) more tasks per job than Google's trace (real window: mean 27.1, median 1,
  80% single-task jobs); (3) longer tasks on average (real window: mean 2362 s, median
  492 s); JVuPredict estimates significantly less accurate than on Google (Fig. 3b).
- Two Sigma's description of a typical job (D. Greenberg, QCon New York 2016, reported by
  The New Stack, 15 June 2016): 1-20 CPUs and 10-100 GB of RAM in total, running 15 minutes
  to a few hours. The median job asks ~6 CPUs and ~68 GB and runs ~35 minutes.
- Every task fits one TwoSigma machine (<= 24 cores, <= 256 GiB), hence m4.16xlarge.

Assumptions (no published number found), also checked where a test can:

- Load: the jobs submitted in a day ask, on average, for 60% of the cluster's busier
  resource (memory-time here, ~200k of 336k GiB; cores ~55% of 31.5k), which is the
  cluster's mean utilization in a steady state. Why 60%: Two Sigma's Cook scheduler is built
  for "more jobs to run than your cluster has capacity for" and advertises "90%+
  utilization" (twosigma/Cook README); taking ~90% at the business-hours peak of the
  daily cycle below (the running load, averaged by time of day, peaks at ~1.45x its mean;
  single days burst higher) gives ~60%. Amvrosiadis et al. (USENIX ATC 2018) analysed
  this trace, but its utilization figures were not reachable here. The replayed day keeps
  whole jobs only (Stratus §4.2), so it offers ~40%.
- Job sizes: 30% single-task jobs, 35% of 2-9 tasks, 28% of 10-99, 6.5% of 100-999 and
  0.5% of 1000-5000 (power laws within): mean ~35 tasks (1.3x Google), median 4-5.
- Requests: memory ~10 GiB per vCPU (ln-sd 0.5; the machines' 10.7 GiB per core, i.e. a
  cluster bought for its workload's shape); CPU per task 2 (single-task jobs), 1.5 (2-9
  tasks), 0.75 (bigger jobs: many small executors), lognormal, in half-vCPU steps, 0.5-24.
- Runtimes: a program's typical task runtime has a median of 30 min (jobs of < 10 tasks),
  27 min (10-99) or 24 min (>= 100), ln-sd 1.0 below and 1.1 above (0.9 and 1.0 for the
  biggest jobs), so tasks average ~50 min with a tail to, never past, one day.
- Arrivals: a daily sinusoid with peak/trough 3 at 13:00 trace time (business hours; the
  tests accept a 2-4x swing); no hourly burstiness, no batches of jobs at one instant.
- Harder to predict: a run's runtime varies around its program's with ln-sd 0.9 (Google-
  like: 0.3) and 25% of jobs are one-offs with a fresh name; tasks of a job stay aligned
  (ln-sd 0.2; Stratus §5.4.2: many tasks with similar runtimes). The history estimator
  then misses by 2x or more on about half the jobs (Google-like: ~16%); 3Sigma (Park et
  al., EuroSys 2018) reports 8-23% for JVuPredict over three traces, this one among them,
  without saying which is which, so this model may be harder to predict than the trace.
- Catalog: 1500 programs of 150 users, popularity ~ rank**-0.5 (a flatter popularity
  than Google's, so the daily load does not hinge on which few programs a seed makes
  popular); priority 0 for every job (the paper describes none).
"""

from __future__ import annotations

from stratus.traces.schema import Trace

from . import common as c
from . import gpus, programs
from .programs import ProgramModel, SizeClass

MODEL = ProgramModel(
    name="twosigma",
    classes=(
        # share of jobs, tasks lo..hi, power-law alpha, typical runtime median (s), ln-sd
        # below and above the median, then CPU per task (memory follows, ~10 GiB per vCPU)
        SizeClass(0.30, 1, 1, 0.0, 1800.0, 1.0, runtime_sigma_hi=1.1,
                  cpu_median=2.0, cpu_sigma=0.7),
        SizeClass(0.35, 2, 9, 1.0, 1800.0, 1.0, runtime_sigma_hi=1.1,
                  cpu_median=1.5, cpu_sigma=0.6),
        SizeClass(0.28, 10, 99, 1.5, 1600.0, 1.0, runtime_sigma_hi=1.1,
                  cpu_median=0.75, cpu_sigma=0.5),
        SizeClass(0.065, 100, 999, 2.0, 1450.0, 0.9, runtime_sigma_hi=1.0,
                  cpu_median=0.75, cpu_sigma=0.5),
        SizeClass(0.005, 1000, 5000, 2.5, 1450.0, 0.9, runtime_sigma_hi=1.0,
                  cpu_median=0.75, cpu_sigma=0.5),
    ),
    tasks_per_day=0.0,  # unused: the volume is in jobs (jobs_per_day)
    jobs_per_day=11_680.0,
    programs=1500,
    users=150,
    program_zipf=0.5,
    user_zipf=1.0,
    adhoc_share=0.25,
    job_sigma=0.9,
    task_sigma=0.2,
    cpu_median=1.5,
    cpu_sigma=0.6,
    cpu_range=(0.5, 24.0),
    gib_per_cpu_median=10.0,
    gib_per_cpu_sigma=0.5,
    mem_range=(1.0, c.MAX_MEM_GIB),
    priorities=(0,),
    priority_probs=(1.0,),
    peak_to_trough=3.0,
    peak_hour=13.0,
    cpu_grid=0.5,
)
DEFAULTS = {"hours": 24.0, "seed": 0, "scale": 1.0, "start_s": 0.0, "whole_jobs": 1,
            "gpu_share": 0.0}


def generate(hours: float = 24.0, seed: int = 0, scale: float = 1.0,
             start_s: float = 0.0, whole_jobs: int = 1, gpu_share: float = 0.0) -> Trace:
    """A TwoSigma-like trace of ``hours`` from ``start_s`` (trace time; 0 = midnight)."""
    params = {"hours": hours, "seed": seed, "scale": scale, "start_s": start_s,
              "whole_jobs": whole_jobs}
    gpus.check_share("twosigma", gpu_share)
    frame, facts = programs.generate(MODEL, hours, seed, scale, start_s, bool(whole_jobs))
    if gpu_share:  # GPU jobs (traces/synthetic/gpus.py); none: the trace as it was
        params["gpu_share"] = gpu_share
        frame = gpus.add_gpu_jobs(frame, gpu_share, seed)
    name = c.trace_name("twosigma", params, DEFAULTS)
    return Trace(frame, name=name, meta={"generator": "twosigma", "params": params, **facts})
