"""Fixtures of the live tests: the local API servers, a small trace from the Google 2011
excerpt, and the configuration both worlds share."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest

pytest.importorskip("boto3")
pytest.importorskip("kubernetes")
pytest.importorskip("moto")
pytest.importorskip("kmock")
pytest.importorskip("tenacity")

EXCERPT = Path(__file__).resolve().parents[1] / "data" / "google2011-excerpt"


@pytest.fixture(scope="module")
def moto_url():
    from tests.live.servers import moto_server

    with moto_server() as url:
        yield url


@pytest.fixture
def kmock_url():
    """A new Kubernetes API per test: kmock lists by scanning every object it holds."""
    from tests.live.servers import install_pod_binding, kmock_server

    with kmock_server(install_pod_binding) as url:
        yield url


def two_world_cfg(**kw):
    """Whole seconds everywhere, so that Kubernetes timestamps carry the times exactly: a
    fixed 45-s spin-up (instances come up between ticks), and a migration rate of 2^29 bit/s (a transfer takes 1/64 s per MiB,
    memory requests are multiples of 64 MiB). Spot prices are constant (moto has none that
    move): 0.3 x on-demand."""
    from stratus.pricing.catalog import M4
    from stratus.pricing.prices import SPOT, PriceBook, PriceSeries
    from stratus.sim.engine import ReplayConfig

    book = PriceBook.on_demand(M4).with_series(
        {(t.name, SPOT): PriceSeries.constant(0.3 * t.ondemand_hourly) for t in M4},
        name="m4 spot at 0.3x")
    base = dict(tick_s=60.0, spinup_s=(45.0, 45.0), migration_mbps=536.870912, seed=1,
                market=SPOT, prices=book)
    base.update(kw)
    return ReplayConfig(**base)


@functools.cache
def _excerpt_frame():
    import stratus

    return stratus.load_trace(str(EXCERPT), format="google2011").frame


def _excerpt():
    if not EXCERPT.exists():
        pytest.skip("tests/data/google2011-excerpt is not in this checkout")
    return _excerpt_frame().copy()


def small_trace(n: int = 160, seed: int = 5, user: str | None = None):
    """``n`` tasks of the Google 2011 excerpt (tests/data), their shapes kept, in whole
    seconds: submits within 20 minutes, runtimes clipped to 30 s .. 25 min, memory rounded
    up to 64 MiB. ``user``: every task's user (live: the namespace of the pods)."""
    import numpy as np

    from stratus.traces.schema import Trace

    f = _excerpt()
    rows = np.sort(np.random.default_rng(seed).choice(len(f), size=n, replace=False))
    f = f.iloc[rows].copy()
    f["submit_s"] = np.floor(f["submit_s"] - f["submit_s"].min())
    f["runtime_s"] = np.clip(np.round(f["runtime_s"]), 30, 1500)
    f["mem_gib"] = np.ceil(f["mem_gib"] * 16 - 1e-9) / 16
    f["cpu"] = np.ceil(f["cpu"] * 1000 - 1e-6) / 1000
    f = f.sort_values(["submit_s"], kind="stable").reset_index(drop=True)
    if user is not None:  # one user (live: the pods' namespace)
        f["user"] = user
    assert all(math.isfinite(x) for x in f["runtime_s"])
    return Trace(f, name=f"google2011-excerpt-{n}")
