"""Speculative LJW on spot VMs (paper 003 §3.1) with the replay engine's bid and revocation
rule, and a catalog type as the reserved server (``--reserved-type``)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.cli import main
from stratus.pricing.catalog import M4
from stratus.pricing.prices import SPOT, PriceBook, PriceSeries
from stratus.sim.engine import SPOT_WARNING_S
from stratus.waiting.bill import smallest_vm_costs
from stratus.waiting.pool import PoolSpec, WaitingPolicy, simulate, summarize
from stratus.waiting.spot import SpotSpeculation, speculation_bill


def _book(spikes: list[tuple[float, float]], base: float = 0.25) -> PriceBook:
    """m4 with every type's spot price at ``base`` x on-demand, and 5 x on-demand (above
    the engine's bid) over each [start, end) of ``spikes``."""
    series = {}
    for t in M4:
        times, prices = [0.0], [base * t.ondemand_hourly]
        for a, b in sorted(spikes):
            if a <= times[-1] or b <= a:
                continue
            times += [a, b]
            prices += [5.0 * t.ondemand_hourly, base * t.ondemand_hourly]
        series[(t.name, SPOT)] = PriceSeries(times, prices)
    return PriceBook.on_demand(M4).with_series(series)


def _revoked_at(book: PriceBook, itype: str, t0: float) -> float:
    """The engine's rule by brute force: the first instant from t0 on with the spot price
    above the bid (on-demand), plus the two-minute warning."""
    s = book.series(itype, SPOT)
    bid = M4[itype].ondemand_hourly
    if s.at(t0) > bid:
        return t0 + SPOT_WARNING_S
    for tt, p in zip(s.times, s.prices):
        if tt > t0 and p > bid:
            return float(tt) + SPOT_WARNING_S
    return math.inf


def test_a_forced_revocation_restarts_the_speculation():
    """One 2-core server, busy to 1000 s. Job 1 (250 s, short at t = 300) speculates on
    spot at 10; the price passes the bid at 100, so it is revoked at 220; it restarts at
    220 on a VM bought above the bid, revoked again at 340; the spike is over and its third
    run ends at 590. Its wait is the 330 s lost; the two revoked runs are the waste."""
    book = _book([(100.0, 300.0)])
    sub = np.array([0.0, 10.0])
    rt = np.array([1000.0, 250.0])
    cpu, mem = np.array([2.0, 2.0]), np.array([8.0, 8.0])
    spot = SpotSpeculation(book, cpu, mem)
    run = simulate(PoolSpec(1, 2.0, 8.0), WaitingPolicy("ljw-spec", t=300.0), sub, rt, cpu,
                   mem, revocation=spot.revocation)
    assert run.speculations == [(1, 10.0, 220.0, "revoked"), (1, 220.0, 340.0, "revoked"),
                                (1, 340.0, 590.0, "done")]
    assert run.cloud.tolist() == [False, True] and run.wait[1] == 330.0
    assert not run.killed.any()
    od = smallest_vm_costs(M4, cpu, mem, rt)
    bill = speculation_bill(run, spot, rt, od)
    large = book.series("m4.large", SPOT)
    assert bill["revocations"] == 2 and bill["killed_usd"] == 0.0
    assert bill["revoked_usd"] == pytest.approx(large.cost(10, 220) + large.cost(220, 340))
    assert bill["cloud_cost"][1] == pytest.approx(0.25 * 0.10 * 250 / 3600)
    out = summarize(run, sub, rt, cpu, 0.04, 1, bill["cloud_cost"], 0.05,
                    waste_usd=bill["revoked_usd"])
    assert out["total_cost_usd"] == pytest.approx(
        out["reserved_cost_usd"] + out["cloud_cost_usd"] + out["speculation_waste_usd"], abs=2e-4)


def test_without_a_spike_spot_speculation_is_on_demand_speculation_at_spot_prices():
    rng = np.random.default_rng(4)
    n = 200
    sub = np.cumsum(rng.exponential(20.0, n))
    rt = rng.exponential(600.0, n)
    cpu = rng.choice([1.0, 2.0, 4.0], n)
    mem = cpu * 4
    spec, pol = PoolSpec(2, 4.0, 16.0), WaitingPolicy("ljw-spec", t=300.0)
    plain = simulate(spec, pol, sub, rt, cpu, mem)
    spot = simulate(spec, pol, sub, rt, cpu, mem,
                    revocation=SpotSpeculation(_book([]), cpu, mem).revocation)
    assert (plain.cloud == spot.cloud).all() and np.allclose(plain.start, spot.start)
    assert plain.speculations == spot.speculations


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), s=st.integers(1, 3), t=st.floats(30, 1500),
       spikes=st.lists(st.tuples(st.floats(0, 8000), st.floats(1, 900)), max_size=4),
       placement=st.sampled_from(["best-fit", "first-fit"]),
       order=st.sampled_from(["fcfs", "sjf"]), wc=st.booleans())
def test_spot_speculation_invariants(seed, s, t, spikes, placement, order, wc):
    """Every job completes exactly once (on the pool, or in one cloud run that ended);
    speculative runs of a job follow one another; a run ends by the engine's revocation
    rule, at t, or at its end, whichever is first; the waste is ≥ 0 and is exactly what the
    killed and revoked runs cost at the spot prices they ran under."""
    rng = np.random.default_rng(seed)
    n = 80
    sub = np.cumsum(rng.exponential(60.0, n))
    rt = rng.exponential(500.0, n) + 1.0
    cpu = rng.choice([1.0, 2.0, 4.0, 8.0, 20.0], n)
    mem = rng.choice([2.0, 8.0, 16.0, 40.0], n)
    book = _book([(a, a + d) for a, d in spikes])
    spot = SpotSpeculation(book, cpu, mem)
    spec = PoolSpec(s, 8.0, 32.0, placement, order, wc)
    run = simulate(spec, WaitingPolicy("ljw-spec", t=t), sub, rt, cpu, mem,
                   revocation=spot.revocation)
    by_job: dict[int, list] = {}
    for j, a, e, what in run.speculations:
        by_job.setdefault(j, []).append((a, e, what))
    for j in range(n):
        runs = by_job.get(j, [])
        done_in_cloud = sum(w == "done" for _, _, w in runs)
        on_pool = not run.cloud[j]
        assert done_in_cloud + int(on_pool) + int(not run.fits[j]) == 1
        assert not runs or runs[0][0] == sub[j]  # speculation starts on arrival
        for (_, e, what), (a2, _, _) in zip(runs, runs[1:]):
            assert what == "revoked" and a2 == e  # only a revoked run restarts, at once
        for a, e, what in runs:
            gone = _revoked_at(book, spot.type_of(j), a)
            if what == "revoked":
                assert e == gone and e < a + rt[j] and e < a + t
            elif what == "killed":
                assert e == pytest.approx(a + t) and gone >= e and rt[j] >= t
            else:
                assert e == pytest.approx(a + rt[j]) and gone >= e and rt[j] < t
                assert run.start[j] == a and run.wait[j] == pytest.approx(a - sub[j])
        if on_pool:
            assert run.start[j] >= max([e for _, e, _ in runs], default=sub[j]) - 1e-9
    od = smallest_vm_costs(M4, cpu, mem, rt)
    bill = speculation_bill(run, spot, rt, od)
    wasted = sum(book.cost(spot.type_of(j), SPOT, a, e)
                 for j, a, e, w in run.speculations if w != "done")
    assert bill["killed_usd"] >= 0 and bill["revoked_usd"] >= 0
    assert bill["killed_usd"] + bill["revoked_usd"] == pytest.approx(wasted)
    assert bill["revocations"] == sum(w == "revoked" for *_, w in run.speculations)
    out = summarize(run, sub, rt, cpu, 0.1, s, bill["cloud_cost"], 0.05,
                    waste_usd=bill["killed_usd"] + bill["revoked_usd"])
    done = sum(book.cost(spot.type_of(j), SPOT, a, e)
               for j, a, e, w in run.speculations if w == "done")
    assert out["cloud_cost_usd"] == pytest.approx(done + od[~run.fits].sum(), abs=1e-4)
    assert out["speculation_waste_usd"] == pytest.approx(wasted, abs=1e-4)


BASE = ["waiting", "simulate", "--trace", "synthetic:google?scale=0.01", "--hours", "6",
        "--seed", "1", "--reserved", "3", "--policy", "ljw-spec", "--t", "300", "--json"]
M4_POOL = ["--catalog", "m4", "--reserved-cores", "16", "--reserved-mem-gb", "64",
           "--reserved-discount", "0.6"]


@pytest.mark.slow
def test_cli_spot_speculation_bills_waste_apart(capsys):
    assert main(BASE + M4_POOL) == 0
    od = json.loads(capsys.readouterr().out)
    assert main(BASE + M4_POOL + ["--speculate-market", "spot"]) == 0
    sp = json.loads(capsys.readouterr().out)
    assert od["speculate_market"] == "on-demand" and sp["speculate_market"] == "spot"
    for d in (od, sp):
        assert d["total_cost_usd"] == pytest.approx(
            d["reserved_cost_usd"] + d["cloud_cost_usd"] + d["speculation_waste_usd"], abs=1e-3)
        assert d["speculation_waste_usd"] == pytest.approx(
            d["speculation_killed_usd"] + d["revocation_waste_usd"], abs=1e-3)
    assert od["revocations"] == 0 and od["revocation_waste_usd"] == 0
    # no spike in these hours of the bundled trace: the same runs, at spot prices
    assert sp["jobs_killed"] == od["jobs_killed"] > 0
    assert 0 < sp["speculation_killed_usd"] < od["speculation_killed_usd"]
    assert sp["cloud_cost_usd"] < od["cloud_cost_usd"]


@pytest.mark.slow
def test_cli_spot_speculation_on_m5_uses_the_synthetic_model(capsys):
    # No --spot-prices and a catalog the bundled m4 trace does not cover: the synthetic
    # model prices m5's types (it refused before the model covered any catalog).
    argv = BASE + ["--reserved-cores", "16", "--reserved-mem-gb", "64"]
    assert main(argv) == 0
    od = json.loads(capsys.readouterr().out)
    assert main(argv + ["--speculate-market", "spot"]) == 0
    sp = json.loads(capsys.readouterr().out)
    assert sp["speculate_market"] == "spot" and sp["jobs_killed"] == od["jobs_killed"] > 0
    assert sp["cloud_cost_usd"] < od["cloud_cost_usd"]


@pytest.mark.parametrize(("extra", "what"), [
    (["--speculate-market", "lottery"], "--speculate-market takes"),
    (["--spot-prices", "nope.json"], "--spot-prices"),
])
def test_cli_spot_speculation_errors(extra, what, capsys):
    argv = BASE + ["--reserved-cores", "16", "--reserved-mem-gb", "64"] + extra
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert what in err and err.count("\n") == 1


def test_spot_speculation_is_for_ljw_spec(capsys):
    argv = [x if x != "ljw-spec" else "njw" for x in BASE] + M4_POOL
    assert main(argv + ["--speculate-market", "spot"]) == 2
    assert "is for --policy ljw-spec" in capsys.readouterr().err


def test_reserved_type_takes_shape_and_price_from_the_catalog(capsys):
    base = ["waiting", "simulate", "--trace", "synthetic:google?scale=0.02", "--hours", "2",
            "--reserved", "2", "--policy", "njw", "--json"]
    assert main(base + ["--reserved-type", "m5.4xlarge"]) == 0
    by_type = json.loads(capsys.readouterr().out)
    assert main(base + ["--reserved-cores", "16", "--reserved-mem-gb", "64"]) == 0
    by_shape = json.loads(capsys.readouterr().out)
    assert by_type["server_type"] == "m5.4xlarge"
    assert by_type["server_reserved_hourly"] == pytest.approx(988.0 * 8 / (3 * 365 * 24),
                                                              rel=1e-5)
    for k in ("total_cost_usd", "on_demand_fraction", "mean_wait_s"):
        assert by_type[k] == by_shape[k]
    assert main(base + ["--reserved-type", "m5.4xlarge", "--reserved-discount", "0.5"]) == 0
    half = json.loads(capsys.readouterr().out)
    assert half["server_reserved_hourly"] == pytest.approx(0.5 * 0.768)
    assert main(base + ["--catalog", "m4", "--reserved-type", "m4.10xlarge",
                        "--reserved-discount", "0.6"]) == 0
    m4 = json.loads(capsys.readouterr().out)
    assert m4["server_type"] == "m4.10xlarge" and m4["server_reserved_hourly"] == \
        pytest.approx(0.8)


@pytest.mark.parametrize(("extra", "what"), [
    (["--reserved-type", "m5.4xlarge", "--reserved-cores", "16"], "not both"),
    (["--reserved-type", "m5.4xlarge", "--reserved-mem-gb", "64"], "not both"),
    (["--reserved-cores", "16"], "--reserved-type"),
    ([], "--reserved-cores and --reserved-mem-gb"),
    (["--reserved-type", "m5.huge"], "--reserved-type: unknown instance type"),
    (["--reserved-type", "m4.large"], "unknown instance type"),  # not an m5 type
])
@pytest.mark.parametrize("cmd", ["waiting", "advise"])
def test_reserved_type_errors(cmd, extra, what, capsys):
    argv = (["waiting", "simulate", "--reserved", "2"] if cmd == "waiting" else ["advise"])
    argv += ["--trace", "synthetic:mms?hours=1", "--policy", "njw", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert what in err and err.count("\n") == 1
