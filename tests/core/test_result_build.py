"""The column-wise instance table adds up exactly as the per-instance loop it replaced."""

from __future__ import annotations

import math
from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.base.resources import DIMS
from stratus.sim.ledger import Ledger
from stratus.sim.result import INSTANCE_COLUMNS, _instance_table, _running_sum

floats = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(floats, floats), max_size=60))
def test_running_sum_rounds_as_a_loop(rows):
    want = [0.0, 0.0]
    for a, b in rows:
        want[0] += a
        want[1] += b
    got = _running_sum(np.array(rows, dtype=np.float64).reshape(-1, 2))
    assert [x.hex() for x in map(float, got)] == [x.hex() for x in want]


TYPES = [SimpleNamespace(name="m4.large", capacity=(2000, 8192)),
         SimpleNamespace(name="m4.xlarge", capacity=(4000, 16384))]
times = st.floats(min_value=0, max_value=1e6, allow_nan=False)
instance = st.tuples(st.sampled_from(TYPES), st.sampled_from(["spot", "on-demand"]), times,
                     times, st.one_of(st.none(), times), times, st.integers(0, 9),
                     st.tuples(times, times))


def reference(insts):
    """The loop of the original ReplayResult.build."""
    rows, by_type, by_market = [], defaultdict(float), defaultdict(float)
    prov, boot, alloc, secs = np.zeros(2), np.zeros(2), np.zeros(2), 0.0
    for i in insts:
        life = i.released_at - i.requested_at
        secs += life
        cap = np.asarray(i.itype.capacity, dtype=np.float64)
        prov += cap * life
        up = i.ready_at if i.ready_at is not None else i.released_at
        boot += cap * (min(up, i.released_at) - i.requested_at)
        alloc += np.asarray(i.used_integral)
        by_type[i.itype.name] += i.cost
        by_market[i.market] += i.cost
        rows.append((i.iid, i.itype.name, i.market, i.requested_at,
                     i.ready_at if i.ready_at is not None else math.nan, i.released_at, i.cost,
                     i.hosted, *(u / c / life if life > 0 else math.nan
                                 for u, c in zip(i.used_integral, i.itype.capacity))))
    rows.sort()
    return pd.DataFrame(rows, columns=INSTANCE_COLUMNS), secs, prov, boot, alloc, by_type, by_market


@pytest.mark.slow
@settings(max_examples=75, deadline=None)
@given(st.lists(instance, min_size=1, max_size=30), st.randoms())
def test_instance_table_matches_the_loop(specs, rnd):
    assert len(DIMS) == 2
    insts = []
    for iid, (itype, market, req, life, up, cost, hosted, used) in enumerate(specs):
        ready = None if up is None else req + min(up, life)
        insts.append(SimpleNamespace(iid=iid, itype=itype, market=market, requested_at=req,
                                     released_at=req + life, ready_at=ready, cost=cost,
                                     hosted=hosted, used_integral=list(used)))
    rnd.shuffle(insts)  # released in any order
    led = Ledger(2)
    for i in insts:
        led.add(i)
    got, want = _instance_table(led, 2), reference(insts)
    pd.testing.assert_frame_equal(got[0], want[0], check_exact=True)
    assert float(got[1]).hex() == float(want[1]).hex()
    for g, w in zip(got[2:5], want[2:5]):
        assert [float(x).hex() for x in g] == [float(x).hex() for x in w]
    assert list(got[5].items()) == list(want[5].items())
    assert list(got[6].items()) == list(want[6].items())
