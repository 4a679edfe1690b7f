"""The Python API of ``stratus share`` (paper 004): ``stratus.sharing.simulate``, ``sweep``,
``defect`` and ``solo``; the keyword arguments are the command's options."""

from __future__ import annotations

from stratus.app.spec.share import SHARE_SPECS, ShareOptions


def run_share(spec: ShareOptions, trace=None):
    """(the command's document, the simulate run or None) for ``spec``."""
    from stratus.app.session import window_trace
    from stratus.app.share import share_doc

    return share_doc(spec, window_trace(spec, trace))


def _call(cmd: str, trace, options: dict) -> dict:
    from stratus.app.api import IN_MEMORY

    spec = SHARE_SPECS[cmd].build({"trace": trace if isinstance(trace, str) else IN_MEMORY,
                                   **options})
    return run_share(spec, trace)[0]


def simulate(trace, reserved, **options) -> dict:
    """One provisioning policy at ``reserved`` units (or "optimal"): the bill, the waits
    and each user's charge (004 §3-4)."""
    return _call("simulate", trace, {"reserved": reserved, **options})


def sweep(trace, **options) -> dict:
    """Normalized price and wait against the reserved units for each policy, and N*
    (004 Figs. 5-7)."""
    return _call("sweep", trace, options)


def defect(trace, **options) -> dict:
    """Users leave when their waits pass θ x runtime (004 Figs. 9-10)."""
    return _call("defect", trace, options)


def solo(trace, **options) -> dict:
    """Each user alone on k reserved units of their own (004 Fig. 11)."""
    return _call("solo", trace, options)
