"""The Python API of ``stratus qos`` (paper 001: QoPS, VQoPS, DVQoPS), exported as
``stratus.qos.run`` and ``stratus.qos.sweep``. The keyword arguments are the fields of
QosRunSpec and QosSweepSpec (stratus.app.spec.qos), so ``stratus.qos.run(trace,
"dvqops", first_jobs=300)`` and ``stratus qos run --trace T --scheme dvqops --first-jobs
300`` are one run; the CLI calls ``run_qos_run`` and ``run_qos_sweep``."""

from __future__ import annotations

from collections.abc import Callable

from stratus.app.api import _spec
from stratus.app.spec.qos import QosRunSpec, QosSweepSpec


def _trace_of(spec, trace):
    """The loaded window: ``trace`` itself when it is a trace object, else the spec's."""
    from stratus.app.session import window_trace

    return window_trace(spec, trace)


def run(trace, scheme: str = "vqops", **options) -> dict:
    """``trace`` (a spec string or a loaded trace) through one admission ``scheme`` (qops,
    vqops or dvqops); the options are ``stratus qos run``'s (oc, urgent_frac, urgent_cost,
    dup_frac, processors, first_jobs, estimates, seed, ...). Returns what ``stratus qos run
    --json`` prints: revenue and acceptance by class, deadline violations, the workload."""
    return run_qos_run(_spec(QosRunSpec, trace, {"scheme": scheme, **options}), trace)[0]


def run_qos_run(spec: QosRunSpec, trace=None) -> tuple[dict, dict]:
    """(the run's document, its per-job columns: what ``--save`` writes)."""
    from stratus.app.qos import run_one

    return run_one(_trace_of(spec, trace), spec)


def sweep(trace, *, progress: bool | Callable[[dict], None] = False, **options) -> dict:
    """Every scheme (VQoPS at each of ``ocs``, DVQoPS auto or at each of
    ``dv_fixed_windows``) on the same seeded workload of each (load, mix) in ``dup_fracs``
    x ``urgent_fracs`` x ``urgent_costs``, with the % revenue change over QoPS (001 Table 1,
    Table 2); what ``stratus qos sweep --json`` prints. ``progress``: True for one line per
    run on stderr, or a function called with each run's summary."""
    return run_qos_sweep(_spec(QosSweepSpec, trace, options), trace, progress)


def run_qos_sweep(spec: QosSweepSpec, trace=None,
                  progress: bool | Callable[[dict], None] | None = None) -> dict:
    from stratus.app.qos import progress_line
    from stratus.app.qos import sweep as sweep_trace

    if progress is True:
        progress = progress_line
    return sweep_trace(_trace_of(spec, trace), spec, progress or None)
