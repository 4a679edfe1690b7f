"""The reserved pool under waiting policies (paper 000 §5): exactness of the fast path,
invariants of the general one, agreement with the queueing model, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.cli import main
from stratus.waiting.analysis import evaluate
from stratus.waiting.pool import POLICIES, PoolSpec, WaitingPolicy, _general, simulate
from tests.helpers.paths import ROOT

NASA = ROOT.parent / "shared" / "data" / "NASA-iPSC-1993-3.1-cln.swf.gz"


def _mms(n, seed, lam=0.2, mu=0.002):
    rng = np.random.default_rng(seed)
    return np.cumsum(rng.exponential(1 / lam, n)), rng.exponential(1 / mu, n)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), s=st.integers(1, 12), policy=st.sampled_from(POLICIES),
       b=st.floats(0, 3000), t=st.floats(0, 1500))
def test_the_fast_path_is_the_general_path_on_unit_pools(seed, s, policy, b, t):
    sub, rt = _mms(300, seed, lam=s * 0.0025)
    cpu, mem = np.ones(300), np.full(300, 4.0)
    spec, pol = PoolSpec(s, 1.0, 4.0), WaitingPolicy(policy, b, t)
    fast = simulate(spec, pol, sub, rt, cpu, mem)
    short = rt < t if policy in ("ljw", "compound") else np.zeros(300, bool)
    slow = _general(spec, pol, sub, rt, cpu, mem, np.ones(300, bool), short,
                    np.zeros(300, bool), np.zeros(300, bool), rt)
    assert (fast.cloud == slow.cloud).all()
    assert np.allclose(fast.wait, slow.wait) and np.allclose(fast.start, slow.start)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), s=st.integers(1, 4), policy=st.sampled_from(POLICIES),
       placement=st.sampled_from(["best-fit", "first-fit"]),
       order=st.sampled_from(["fcfs", "sjf"]), wc=st.booleans(), b=st.floats(0, 2000))
def test_general_pool_invariants(seed, s, policy, placement, order, wc, b):
    """Every job runs once; no server is ever over-committed; waits are start - submit;
    NJW never waits, AJW never leaves, AJW-T waits at most b."""
    rng = np.random.default_rng(seed)
    n = 120
    sub = np.cumsum(rng.exponential(30.0, n))
    rt = rng.exponential(400.0, n)
    cpu = rng.choice([1.0, 2.0, 4.0, 8.0, 20.0], n)
    mem = rng.choice([1.0, 4.0, 16.0, 40.0], n)
    spec = PoolSpec(s, 8.0, 32.0, placement, order, wc)
    run = simulate(spec, WaitingPolicy(policy, b, 300.0), sub, rt, cpu, mem)
    assert np.all(run.start >= sub - 1e-9) and np.allclose(run.wait, run.start - sub)
    assert (run.cloud[~run.fits]).all()
    pool = ~run.cloud
    assert (run.server[pool] >= 0).all() and (run.server[run.cloud] == -1).all()
    for k in range(s):  # sweep each server's load over time
        mine = np.nonzero(run.server == k)[0]
        ev = sorted([(run.start[j] + rt[j], 0, -cpu[j], -mem[j]) for j in mine]
                    + [(run.start[j], 1, cpu[j], mem[j]) for j in mine])
        c = m = 0.0
        for _, _, dc, dm in ev:
            c += dc
            m += dm
            assert c <= 8.0 + 1e-9 and m <= 32.0 + 1e-9
    if policy == "njw":
        assert np.all(run.wait == 0)
    if policy == "ajw":
        assert not run.cloud[run.fits].any()
    if policy == "ajw-t":
        assert np.all(run.wait <= b + 1e-6)
    if order == "fcfs" and not wc and policy in ("ajw", "ljw"):
        on = np.nonzero(pool)[0]
        assert np.all(np.diff(run.start[on]) >= -1e-9)  # the head only: starts in order


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "s", "b"), [("njw", 108, 0), ("ajw", 108, 0),
                                                ("ajw-t", 101, 900), ("sww", 120, 900)])
def test_the_pool_agrees_with_the_model_on_mms(policy, s, b):
    n = 300_000
    sub, rt = _mms(n, seed=3)
    run = simulate(PoolSpec(s, 1.0, 4.0), WaitingPolicy(policy, b), sub, rt, np.ones(n),
                   np.full(n, 4.0))
    price = (s * 3.84 * (sub[-1] - sub[0]) + 9.6 * (rt * run.cloud).sum()) / (9.6 * rt.sum())
    model = evaluate(policy, s, lam=0.2, mu=0.002, pf=3.84, po=9.6, b=b)
    assert price == pytest.approx(model.normalized_price, rel=0.01)
    assert run.cloud.mean() == pytest.approx(model.on_demand_fraction, abs=0.003)


@pytest.mark.slow
def test_cli_json_matches_the_analyzer(capsys):
    assert main(["waiting", "simulate", "--trace", "synthetic:mms?cpu=1&mem=4&hours=400",
                 "--reserved", "108", "--reserved-cores", "1", "--reserved-mem-gb", "4",
                 "--reserved-discount", "0.6", "--policy", "njw", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"policy", "reserved", "jobs", "mean_wait_s", "normalized_price",
                        "on_demand_fraction", "total_cost_usd", "reserved_cost_usd",
                        "cloud_cost_usd", "opportunity_cost"}
    assert doc["total_cost_usd"] == pytest.approx(doc["reserved_cost_usd"]
                                                  + doc["cloud_cost_usd"], abs=1e-3)
    assert doc["normalized_price"] == pytest.approx(0.467, abs=0.01)
    assert doc["steady_state"] == 0.1 and doc["server_type"] == "m5.large"


@pytest.mark.slow
def test_mispredicted_sww_sends_over_predictions_away(capsys):
    base = ["waiting", "simulate", "--trace", "synthetic:mms?cpu=1&mem=4&hours=200",
            "--reserved", "101", "--reserved-cores", "1", "--reserved-mem-gb", "4",
            "--reserved-discount", "0.6", "--policy", "sww", "--b", "900", "--json"]
    main(base)
    exact = json.loads(capsys.readouterr().out)
    main(base + ["--f-over", "0.3"])
    over = json.loads(capsys.readouterr().out)
    assert over["on_demand_fraction"] > exact["on_demand_fraction"] + 0.25
    assert over["mean_wait_s"] < exact["mean_wait_s"]


@pytest.mark.parametrize(("argv", "what"), [
    (["--reserved", "-1"], "--reserved"),
    (["--reserved-cores", "0"], "--reserved-cores"),
    (["--policy", "wait"], "unknown waiting policy"),
    (["--packing", "worst-fit"], "--packing"),
    (["--scheduling", "lifo"], "--scheduling"),
    (["--b", "-3"], "--b"),
    (["--steady-state", "0.7"], "--steady-state"),
    (["--reserved-discount", "1.5"], "--reserved-discount"),
    (["--reserved-cores", "500"], "no m5 type"),
])
def test_bad_options_are_one_line(argv, what, capsys):
    args = {"--reserved": "10", "--reserved-cores": "1", "--reserved-mem-gb": "4",
            "--policy": "njw"}
    args.update(dict(zip(argv[::2], argv[1::2])))
    flat = [x for kv in args.items() for x in kv]
    assert main(["waiting", "simulate", "--trace", "synthetic:mms?hours=1", *flat]) == 2
    err = capsys.readouterr().err
    assert what in err and err.count("\n") == 1


@pytest.mark.slow
@pytest.mark.skipif(not NASA.exists(), reason="../shared/data/NASA log not present")
@pytest.mark.parametrize(("servers", "cores"), [(3, 32), (8, 16)])
def test_nasa_runs_on_two_pools_with_first_fit(servers, cores, capsys):
    assert main(["waiting", "simulate", "--trace", str(NASA), "--format", "swf",
                 "--reserved", str(servers), "--reserved-cores", str(cores),
                 "--reserved-mem-gb", str(4 * cores), "--reserved-discount", "0.6",
                 "--packing", "first-fit", "--policy", "njw", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["jobs"] > 18_000 and 0 < doc["on_demand_fraction"] < 1


def test_the_overflow_replays_through_a_vc_scheduler(capsys):
    """000 §5 composed with a virtual cluster: the jobs that leave the pool are replayed
    by a registered scheduler at the times they left; the bill adds up."""
    base = ["waiting", "simulate", "--trace", "synthetic:google?scale=0.02", "--hours", "4",
            "--seed", "2", "--reserved", "4", "--reserved-cores", "16",
            "--reserved-mem-gb", "64", "--policy", "njw", "--json"]
    main(base)
    vm = json.loads(capsys.readouterr().out)
    assert main(base + ["--cloud", "task-per-instance", "--market", "on-demand"]) == 0
    vc = json.loads(capsys.readouterr().out)
    assert vc["on_demand_fraction"] == vm["on_demand_fraction"] > 0
    assert vc["cloud_replay"]["tasks"] == round(vm["on_demand_fraction"] * vm["jobs"])
    assert vc["total_cost_usd"] == pytest.approx(vc["reserved_cost_usd"] + vc["cloud_cost_usd"],
                                                 abs=1e-3)
    assert vc["cloud_cost_smallest_vm_usd"] == vm["cloud_cost_usd"]
    ratio = vc["normalized_price"] / vm["normalized_price"]
    assert ratio == pytest.approx(vc["total_cost_usd"] / vm["total_cost_usd"], rel=1e-4)
    assert main(base + ["--cloud", "nope"]) == 2


@pytest.mark.slow
def test_advise_finds_the_njw_optimum_of_the_model(tmp_path, capsys):
    """000 §3.2: NJW's optimum on the baseline is s = 108; the simulated marginal analysis
    on an M/M/s trace lands within 2 of it, and the MILP's start is reported beside it."""
    from stratus.waiting.analysis import optimal_servers

    out = tmp_path / "advice.png"
    assert main(["advise", "--trace", "synthetic:mms?cpu=1&mem=4&hours=300", "--policy", "njw",
                 "--reserved-cores", "1", "--reserved-mem-gb", "4", "--reserved-discount", "0.6",
                 "--plot", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    model = optimal_servers("njw", 0.2, 0.002, 3.84, 9.6)
    assert abs(doc["optimal_servers"] - model) <= 2
    costs = {p["servers"]: p["total_cost_usd"] for p in doc["points"]}
    assert costs[doc["optimal_servers"]] == min(costs.values())
    assert doc["milp_extra_cost_pct"] >= 0
    assert out.stat().st_size > 1000
    assert main(["advise", "--trace", "synthetic:mms?hours=1", "--policy", "njw",
                 "--reserved-cores", "1", "--reserved-mem-gb", "4", "--plot", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_search_walks_to_the_cheapest_neighbour():
    from stratus.waiting.advisor import Point, search

    def cost(s):
        return Point(s, (s - 17) ** 2 + 5.0, None, 0.0, 0.0)

    best, seen = search(cost, 40)
    assert best == 17 and len(seen) < 30
    assert search(cost, 0)[0] == 17


def test_the_milp_balances_reserved_and_on_demand():
    from stratus.waiting.advisor import milp_servers

    # 2 servers always busy, a 3rd half the time: at a discount of 0.6 the 3rd pays
    # (0.5 x 1.0 on demand > 0.4 reserved), a 4th (busy never) does not
    load = np.array([2.0, 3.0] * 50)
    assert milp_servers(load, 3600.0, 1.0, 0.4, 1.0) == 3
    assert milp_servers(load, 3600.0, 1.0, 0.6, 1.0) == 2


def test_speculation_kills_long_jobs_at_t_and_bills_the_waste():
    """003 §3.1: with every server busy, a job runs on demand; short ones finish there,
    long ones are killed at t and queue; their t seconds of VM are wasted."""
    # one server, busy with job 0 for 1000 s; job 1 (100 s) and job 2 (900 s) arrive
    sub = np.array([0.0, 10.0, 20.0])
    rt = np.array([1000.0, 100.0, 900.0])
    run = simulate(PoolSpec(1, 1.0, 4.0), WaitingPolicy("ljw-spec", t=300.0), sub, rt,
                   np.ones(3), np.full(3, 4.0))
    assert run.cloud.tolist() == [False, True, False]
    assert run.killed.tolist() == [False, False, True]
    assert run.start[2] == 1000.0 and run.wait[2] == 980.0  # killed at 320, waits to 1000
    from stratus.waiting.pool import summarize

    out = summarize(run, sub, rt, np.ones(3), 0.0, 1, np.array([1.0, 1.0, 9.0]), 1.0,
                    speculation_s=300.0)
    assert out["speculation_waste_usd"] == pytest.approx(9.0 * 300 / 900)
    assert out["cloud_cost_usd"] == 1.0 and out["jobs_killed"] == 1


@pytest.mark.parametrize("cloud", [[], ["--cloud", "task-per-instance", "--market",
                                        "on-demand"]])
def test_with_no_servers_the_normalized_price_does_not_depend_on_their_shape(capsys, cloud):
    """Issue 35 item 4: with --reserved 0 every job runs on demand, and the price per unit
    of work cannot depend on a server that does not exist (it was 0.43, 4.28 and 8.57 for
    shapes (0.1, 0.4), (1, 4) and (8, 32)). The unit is the jobs' own on-demand bill: 1
    when each runs on the cheapest VM that fits it."""
    docs = []
    for cores, mem in (("0.1", "0.4"), ("1", "4"), ("8", "32")):
        assert main(["waiting", "simulate", "--trace", "synthetic:google?scale=0.01",
                     "--hours", "2", "--reserved", "0", "--reserved-cores", cores,
                     "--reserved-mem-gb", mem, "--policy", "njw", *cloud, "--json"]) == 0
        docs.append(json.loads(capsys.readouterr().out))
    prices = {d["normalized_price"] for d in docs}
    assert len(prices) == 1 and len({d["total_cost_usd"] for d in docs}) == 1
    if not cloud:
        assert prices == {1.0} and docs[0]["on_demand_fraction"] == 1.0


def test_the_normalized_price_is_the_bill_over_the_all_on_demand_bill(capsys):
    assert main(["waiting", "simulate", "--trace", "synthetic:google?scale=0.01",
                 "--hours", "2", "--reserved", "2", "--reserved-cores", "8",
                 "--reserved-mem-gb", "32", "--policy", "ajw-t", "--b", "600", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    from stratus.app.api import load_trace
    from stratus.pricing.catalog_files import get_catalog
    from stratus.waiting.bill import smallest_vm_costs

    f = load_trace("synthetic:google?scale=0.01", hours=2).frame
    od = smallest_vm_costs(get_catalog("m5"), f["cpu"].to_numpy(), f["mem_gib"].to_numpy(),
                           f["runtime_s"].to_numpy()).sum()
    # (the total is rounded to 4 decimals in the document)
    assert doc["normalized_price"] == pytest.approx(doc["total_cost_usd"] / od, rel=2e-4)
    core_h = float((f["cpu"] * f["runtime_s"]).sum()) / 3600
    assert doc["opportunity_cost"] == pytest.approx(
        doc["total_cost_usd"] / core_h * doc["mean_wait_s"], rel=1e-5)
