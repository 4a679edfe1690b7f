"""The device-assignment checker (stratus/sim/devices.py): whole requests take whole devices,
each share sits on one device; first fit decreasing, then an exact search, against a
brute force over every assignment."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.sim.devices import _ffd, device_assignment


def brute(requests, n_gpus: int) -> bool:
    whole = sum(-(-r // 1000) for r in requests if r >= 1000)
    shares = [r for r in requests if 0 < r < 1000]
    bins = n_gpus - whole
    if bins < 0:
        return False
    if not shares:
        return True
    if bins == 0:
        return False
    for where in itertools.product(range(bins), repeat=len(shares)):
        load = [0] * bins
        for s, d in zip(shares, where):
            load[d] += s
        if max(load) <= 1000:
            return True
    return False


def test_the_pool_fits_and_the_devices_do_not():
    assert device_assignment([600, 600, 600], 2) is False  # 1800 <= 2000, no device holds two
    assert device_assignment([600, 600, 600], 3) is True
    assert device_assignment([470, 470], 1) is True  # two shares on one GPU
    assert device_assignment([2000, 500, 500], 3) is True
    assert device_assignment([2000, 600, 500], 3) is False
    assert device_assignment([], 0) is True and device_assignment([0, 0], 0) is True


def test_exact_search_where_first_fit_decreasing_fails():
    shares = [500, 400, 300, 300, 250, 250]  # {500, 250, 250} and {400, 300, 300}
    assert not _ffd(shares, 2)
    assert device_assignment(shares, 2) is True


REQUESTS = st.lists(st.one_of(st.integers(1, 999), st.sampled_from([0, 1000, 2000, 4000]),
                              st.sampled_from([250, 300, 334, 400, 500, 501, 600])),
                    max_size=7)


@settings(max_examples=300)
@given(requests=REQUESTS, n_gpus=st.integers(0, 4))
def test_device_assignment_is_the_brute_force(requests, n_gpus):
    got = device_assignment(requests, n_gpus)
    assert got == brute(requests, n_gpus)
    if got:  # an assignment to devices fits the pool, so the engine would place it too
        assert sum(requests) <= 1000 * n_gpus


def test_the_benchmark_add_on_counts_states_past_the_devices():
    """benchmarks/gpu_devices.py's add-on on a replay: six 0.6-GPU tasks on one 4-GPU type
    fit its pool (3600 of 4000 thousandths), and the states with a fifth and a sixth task
    on one instance fit no assignment to its devices."""
    import importlib.util

    import pandas as pd

    from stratus.app.registry import make_scheduler
    from stratus.pricing.catalog import Catalog, InstanceType
    from stratus.sim.engine import Engine, ReplayConfig
    from stratus.traces.schema import Trace
    from tests.helpers.paths import ROOT

    spec = importlib.util.spec_from_file_location("gpu_devices",
                                                  ROOT / "benchmarks" / "gpu_devices.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    df = pd.DataFrame({"job_id": range(6), "task_id": 0, "submit_s": 0.0, "runtime_s": 3600.0,
                       "cpu": 1.0, "mem_gib": 1.0, "gpus": 0.6, "user": "u",
                       "job_name": "j", "priority": 0})
    cat = Catalog([InstanceType("g4", 16, 64, 4.0, gpus=4)], name="one-4-gpu-type")
    check = mod.DeviceCheck()
    res = Engine(Trace(df, name="t"), make_scheduler("fleet"),
                 ReplayConfig(seed=1, catalog=cat, market="on-demand"), addons=[check]).run()
    assert res.summary["instances_acquired"] == 1
    c = check.counts
    assert c["states_on_gpu_types"] == c["states_multi_gpu_with_share"] == 6
    assert c["no_device_assignment"] == 2 and not c["undecided"]
