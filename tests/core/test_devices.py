"""The device-assignment checker (stratus/devices.py): whole requests take whole devices,
each share sits on one device; first fit decreasing, then an exact search, against a
brute force over every assignment."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.devices import _ffd, device_assignment


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
