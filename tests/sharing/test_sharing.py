"""Paper 004's shared cluster (stratus.sharing): hand-worked small cases, the policies'
invariants and chargeback's budget balance as properties, the defection fixpoint, flying
solo, the CLI, and the NASA limits of spec B.11 item 1."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.cli import main
from stratus.base.errors import ConfigError
from stratus.sharing.analyses import burst_peak, defect, parse_grid, solo, sweep
from stratus.sharing.chargeback import charges, job_charges, per_user
from stratus.sharing.cluster import POLICIES, Cluster, Workload, od_core_hour, run, summary
from stratus.waiting.pool import PoolSpec, WaitingPolicy, simulate
from tests.helpers.paths import DATA, FIXTURES

NASA = DATA / "NASA-iPSC-1993-3.1-cln.swf.gz"
P = 0.048 / 3600.0  # on-demand $ per core-second (m5, 004 §5)


def _w(rows, users=None) -> Workload:
    """rows: (submit, runtime, cpu, user code), already in queue order."""
    a = np.array(rows, dtype=np.float64).reshape(-1, 4)
    k = int(a[:, 3].max()) + 1 if len(a) else 1
    return Workload(job_id=np.arange(len(a)), submit=a[:, 0], runtime=a[:, 1], cpu=a[:, 2],
                    mem=np.zeros(len(a)), user=a[:, 3].astype(np.int64),
                    users=tuple(users or [f"u{i}" for i in range(k)]),
                    t0=float(a[0, 0]) if len(a) else 0.0,
                    period_end=float(a[-1, 0]) if len(a) else 0.0)


# j0 holds both cores 0-100; j1 and j2 (user 1) arrive behind it
SMALL = _w([(0, 100, 2, 0), (10, 50, 1, 1), (20, 30, 1, 1)])


def test_odcore_hour_is_m5s():
    assert od_core_hour() == pytest.approx(0.048)


def test_lift_and_shift_by_hand():
    sr = run(SMALL, Cluster("lift-and-shift", 2, ratio=0.5))
    assert list(sr.wait) == [0, 90, 80] and not sr.ondemand.any()  # both start at 100
    assert sr.t1 == 150
    assert sr.reserved_cost == pytest.approx(2 * 0.5 * 0.048 * 150 / 3600)
    assert sr.normalized_price == pytest.approx(sr.reserved_cost / (280 * P))


def test_burst_without_waiting_by_hand_and_capitalist_prices():
    sr = run(SMALL, Cluster("burst-nowait", 2, ratio=0.5))
    assert list(sr.ondemand) == [False, True, True] and sr.wait.max() == 0
    assert sr.t1 == 100
    cres = 2 * 0.5 * 0.048 * 100 / 3600
    assert sr.total_cost == pytest.approx(cres + 80 * P)
    ch, note = charges(sr, "capitalist")
    assert note is None
    assert ch[0] == pytest.approx(cres) and ch[1] == pytest.approx(80 * P)
    # all-reserved user: ρ 3600 / p_od; all on-demand user: 1 (spec B.11 item 5)
    users, _ = per_user(sr, "capitalist")
    rho = cres / 200.0
    assert users[0]["price"] == pytest.approx(rho * 3600 / 0.048)
    assert users[1]["price"] == pytest.approx(1.0)
    soc, _ = per_user(sr, "socialist")
    assert all(u["price"] == pytest.approx(sr.normalized_price) for u in soc)


def test_burst_with_waiting_by_hand():
    # j1 is long: queues behind j0 and leaves at 10 + 60 with wait 60; j2 is short and the
    # queue is not empty: on-demand at once
    sr = run(SMALL, Cluster("burst-wait", 2, ratio=0.5, b=60.0, t=40.0))
    assert list(sr.ondemand) == [False, True, True]
    assert list(sr.wait) == [0, 60, 0] and sr.t1 == 120
    # a short job with the queue empty and room takes reserved capacity (spec B.2) ...
    w = _w([(0, 100, 1, 0), (5, 30, 1, 1)])
    assert not run(w, Cluster("burst-wait", 2, b=60.0, t=40.0)).ondemand.any()
    # ... unless --short-jobs ondemand (the authors' code)
    c = Cluster("burst-wait", 2, b=60.0, t=40.0, short_jobs="ondemand")
    assert list(run(w, c).ondemand) == [False, True]


def test_head_of_line_blocks_without_backfilling():
    """Strict FCFS (004 §2.3): a small job behind a big queued one waits even with room."""
    w = _w([(0, 100, 3, 0), (1, 10, 4, 0), (2, 10, 1, 1)])
    sr = run(w, Cluster("lift-and-shift", 4))
    assert list(sr.start) == [0, 100, 110]


def test_never_fit_goes_on_demand_in_every_policy():
    w = _w([(0, 10, 8, 0), (1, 10, 2, 0)])
    for p in POLICIES:
        sr = run(w, Cluster(p, 4))
        assert list(sr.never_fit) == [True, False] and sr.ondemand[0] and sr.wait[0] == 0


def test_node_mode_fits_whole_vms():
    w = _w([(0, 100, 2, 0), (0, 100, 2, 0), (1, 100, 2, 1)])
    sr = run(w, Cluster("burst-nowait", 2, mode="node", vm="m5.large", od_sizing="m5"))
    assert list(sr.ondemand) == [False, False, True]  # two 2-vCPU VMs, one job each
    # m5.large on-demand 0.096 $/h, reserved at 0.6 of it over [0, 101]
    assert sr.reserved_cost == pytest.approx(2 * 0.6 * 0.096 * 101 / 3600)


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 25))
    gaps = draw(st.lists(st.integers(0, 300), min_size=n, max_size=n))
    rts = draw(st.lists(st.integers(1, 900), min_size=n, max_size=n))
    cpus = draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=n, max_size=n))
    us = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    sub = np.cumsum(gaps)
    return _w([(s, r, c, u) for s, r, c, u in zip(sub, rts, cpus, us)])


def _max_load(sr) -> float:
    """Most reserved cores in use at any instant (ends before starts at equal times)."""
    res = ~sr.ondemand
    ev = sorted([(s, 1, c) for s, c in zip(sr.start[res], sr.workload.cpu[res])] +
                [(s + r, 0, -c) for s, r, c in zip(sr.start[res], sr.workload.runtime[res],
                                                   sr.workload.cpu[res])])
    load = top = 0.0
    for _, _, d in ev:
        load += d
        top = max(top, load)
    return top


@pytest.mark.slow
@settings(max_examples=75, deadline=None)
@given(w=workloads(), n=st.integers(0, 12), policy=st.sampled_from(POLICIES),
       ratio=st.sampled_from([0.4, 0.6, 1.0]), short=st.sampled_from(["reserved-first",
                                                                      "ondemand"]))
def test_policy_invariants_and_budget_balance(w, n, policy, ratio, short):
    c = Cluster(policy, n, ratio=ratio, b=600.0, t=120.0, short_jobs=short)
    sr = run(w, c)
    res = ~sr.ondemand
    # waits are start - submit; reserved capacity is never exceeded
    assert np.allclose(sr.wait, sr.start - w.submit) and (sr.wait >= 0).all()
    assert _max_load(sr) <= n + 1e-9
    # FCFS: jobs start on reserved capacity in queue order (spec B.11 item 2)
    assert (np.diff(sr.start[res]) >= 0).all()
    assert (sr.never_fit == (w.cpu > n)).all() and sr.ondemand[sr.never_fit].all()
    if policy == "burst-nowait":
        assert sr.wait.max() == 0
    if policy == "lift-and-shift":
        assert (sr.ondemand == sr.never_fit).all()
    if policy == "burst-wait":
        assert sr.wait.max() <= 600.0
        assert (sr.wait[w.runtime <= 120.0] == 0).all()
        assert np.isin(sr.wait[sr.ondemand], [0.0, 600.0]).all()
    # budget balance under both pricings; nobody pays a negative amount
    for pricing in ("socialist", "capitalist"):
        ch, _ = charges(sr, pricing)
        assert ch.sum() == pytest.approx(sr.total_cost, rel=1e-9, abs=1e-15)
        assert (ch >= 0).all()
        jc = job_charges(sr, pricing)
        assert np.allclose(np.bincount(w.user, jc, minlength=len(w.users)), ch, rtol=1e-9,
                           atol=1e-15)
    s = summary(sr)
    assert s["ondemand_jobs"] == int(sr.ondemand.sum())
    if n == 0:
        assert sr.normalized_price == 1.0


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(w=workloads(), n=st.integers(0, 10), pricing=st.sampled_from(["socialist",
                                                                      "capitalist"]),
       on_price=st.booleans())
def test_defection_reaches_a_fixpoint(w, n, pricing, on_price):
    c = Cluster("burst-wait", n, b=600.0, t=120.0)
    d = defect(w, c, [0.0, 1.0, 5.0, math.inf], pricing, on_price)
    k = len(np.unique(w.user))
    for t in d["thetas"]:
        assert 1 <= t["rounds"] <= k + 1 or t["users_left"] == 0
        assert t["per_round"][-1]["defectors"] == 0 or t["users_left"] == 0
        assert [r["users"] for r in t["per_round"]] == sorted(
            [r["users"] for r in t["per_round"]], reverse=True)
    inf = d["thetas"][-1]
    if not on_price:
        assert inf["participation"] == 1.0 and inf["normalized_price"] == d["no_defection_price"]


def test_defection_by_hand():
    # user 1's job waits 90 s behind user 0's for 10 s of work: ratio 9 > θ = 5; alone,
    # user 0 pays for the reserved core over the same horizon
    w = _w([(0, 100, 1, 0), (10, 10, 1, 1)])
    d = defect(w, Cluster("lift-and-shift", 1), [5.0, 10.0])
    five, ten = d["thetas"]
    assert five["participation"] == 0.5 and five["rounds"] == 2
    assert ten["participation"] == 1.0 and ten["rounds"] == 1


def test_solo_k0_is_on_demand_and_kstar_is_no_worse():
    w = _w([(i * 10, 3000, 1, 0) for i in range(40)] + [(5, 50, 4, 1)])
    w = w.subset(np.argsort(w.submit, kind="stable"))
    d = solo(w, Cluster("burst-wait", 0, ratio=0.4), [0, 1, 2, 4], burst_jobs=10,
             shared=Cluster("burst-wait", 4, ratio=0.4))
    for u in d["per_user"]:
        k0 = u["curve"][0]
        assert k0["k"] == 0 and k0["price"] == 1.0 and k0["mean_wait_s"] == 0.0
        assert u["price"] <= 1.0
    u0 = next(u for u in d["per_user"] if u["user"] == "u0")
    assert u0["k_star"] >= 1 and u0["class"] == "baseload"  # 40 overlapping 50-min jobs
    assert list(burst_peak(w)) == [30, 1]


def test_sweep_picks_the_cheapest_n():
    s = sweep(SMALL, Cluster(ratio=0.5), ["burst-nowait"], [0, 1, 2])
    pts = s["policies"][0]["points"]
    assert s["optimal"]["burst-nowait"]["normalized_price"] == min(
        p["normalized_price"] for p in pts)


def test_grid_and_options_are_checked():
    assert parse_grid("0:16:8") == [0, 8, 16] and parse_grid("4,2") == [2, 4]
    for bad in ("x", "8:0:1", "0:8:0", "-1", ""):
        with pytest.raises(ConfigError):
            parse_grid(bad)
    for kw in ({"policy": "x"}, {"ratio": 0.0}, {"b": -1.0}, {"short_jobs": "x"},
               {"mode": "node", "vm": "m4.large"}, {"reserved": -1}):
        with pytest.raises(ConfigError):
            Cluster(**kw)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), s=st.integers(1, 6), b=st.floats(0, 2000),
       t=st.floats(0, 800), short_first=st.booleans())
def test_pool_timer_and_short_first_agree_on_both_paths(seed, s, b, t, short_first):
    """The pool engine's new options give the same run on the unit fast path as on the
    event path (forced by an observer)."""
    rng = np.random.default_rng(seed)
    n = 150
    sub = np.cumsum(rng.exponential(100.0, n))
    rt = rng.exponential(400.0, n)
    cpu, mem = np.ones(n), np.ones(n)
    spec = PoolSpec(s, 1.0, 4.0, work_conserving=False)
    pol = WaitingPolicy("compound", b, t)
    short = rt <= t
    fast = simulate(spec, pol, sub, rt, cpu, mem, short, short_first=short_first, timer=True)
    slow = simulate(spec, pol, sub, rt, cpu, mem, short, observe=lambda *a: None,
                    short_first=short_first, timer=True)
    assert (fast.cloud == slow.cloud).all()
    assert np.allclose(fast.wait, slow.wait) and np.allclose(fast.start, slow.start)


def _nasa():
    from stratus.sharing.cluster import workload_from_frame
    from stratus.traces import swf

    return workload_from_frame(swf.load(NASA).frame, "nasa")


@pytest.mark.slow
def test_nasa_limits():
    """Spec B.11 item 1: N = 0 is pure on-demand; N = 4096 never waits and costs the
    closed form ratio N H / Σ OD_j."""
    w = _nasa()
    assert w.n == 18239 and len(w.users) == 69
    for p in POLICIES:
        for pricing in ("socialist", "capitalist"):
            sr = run(w, Cluster(p, 0))
            assert sr.normalized_price == 1.0 and sr.wait.max() == 0 and sr.ondemand.all()
            users, _ = per_user(sr, pricing)
            assert all(u["price"] == pytest.approx(1.0, abs=1e-12) for u in users)
        sr = run(w, Cluster(p, 4096))
        assert sr.wait.max() == 0 and not sr.ondemand.any()
        h = float((w.submit + w.runtime).max() - w.submit.min())
        od = float((w.cpu * w.runtime).sum()) * P
        assert sr.normalized_price == pytest.approx(0.6 * 4096 * h * P / od, rel=1e-9)


@pytest.mark.slow
def test_cli_share_commands(capsys, tmp_path):
    small = str(FIXTURES / "swf" / "small.swf")
    for cmd in (["simulate", "--reserved", "4"], ["sweep", "--reserved", "0:8:4"],
                ["defect", "--reserved", "4", "--thetas", "1,inf"],
                ["solo", "--reserved", "optimal", "--grid", "0,4", "--ks", "0,2"]):
        assert main(["share", *cmd, "--trace", small, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["mode"] == "pool" and doc["ratio"] == 0.6
    png = tmp_path / "f.png"
    assert main(["share", "sweep", "--trace", small, "--reserved", "0:8:4", "--plot",
                 str(png)]) == 0
    assert png.stat().st_size > 0
    assert main(["share", "sweep", "--trace", small, "--plot", str(png)]) == 2  # exists
    assert "already exists" in capsys.readouterr().err
    assert main(["share", "simulate", "--trace", small, "--reserved", "4", "--save",
                 str(tmp_path / "d"), "--json"]) == 0
    assert (tmp_path / "d" / "jobs.parquet").exists()
    capsys.readouterr()
    assert main(["share", "simulate", "--trace", small, "--reserved", "1", "--strict"]) == 2
    assert "--strict" in capsys.readouterr().err
    assert main(["share", "simulate", "--trace", small, "--reserved", "64", "--strict",
                 "--steady-state", "0.2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["steady_state"] == 0.2
    for bad in (["simulate", "--reserved", "x"], ["simulate", "--reserved", "4", "--steady-state", "0.5"], ["sweep", "--policies", "nope"],
                ["defect", "--thetas", "a"], ["solo", "--ks", "1.5"],
                ["simulate", "--reserved", "1", "--pricing", "x"]):
        assert main(["share", *bad, "--trace", small]) == 2
        err = capsys.readouterr().err
        assert err.startswith("stratus: error:") and err.count("\n") == 1
        assert bad[-2] in err or bad[-2] == "--reserved" and "--reserved" in err, err


def test_cli_share_is_deterministic(capsys):
    small = str(FIXTURES / "swf" / "small.swf")
    outs = []
    for _ in range(2):
        assert main(["share", "defect", "--trace", small, "--reserved", "4", "--json"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]


def test_periods_price_each_span_at_the_previous_optimum():
    from stratus.sharing.analyses import periods

    w = _w([(i * 100, 90, 1 + (i >= 10), 0) for i in range(20)])
    rows = periods(w, Cluster(ratio=0.5), ["burst-nowait"], [0, 1, 2], 2)
    assert [r["jobs"] for r in rows] == [10, 10] and "at_previous_optimum" not in rows[0]
    prev = rows[0]["optimal"]["burst-nowait"]["reserved"]
    at = rows[1]["at_previous_optimum"]["burst-nowait"]
    assert at["reserved"] == prev and at["normalized_price"] == rows[1]["price"][
        "burst-nowait"][[0, 1, 2].index(prev)]
    with pytest.raises(ConfigError):
        periods(w, Cluster(), ["burst-nowait"], [0], 0)
