"""A reserved pool of servers of several shapes (``PoolSpec.mixed``, a reserved mix):
equal shapes are the identical pool, job for job, on either path; unequal shapes start
each server's room from its own shape; hand-computed placements."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stratus.app.cli import main
from stratus.base.errors import ConfigError
from stratus.waiting.pool import POLICIES, PoolSpec, WaitingPolicy, simulate, summarize


def _same(a, b) -> None:
    assert (a.cloud == b.cloud).all() and (a.fits == b.fits).all()
    assert np.array_equal(a.start, b.start, equal_nan=True)
    assert np.array_equal(a.wait, b.wait)
    for x, y in ((a.server, b.server), (a.killed, b.killed)):
        assert (x is None) == (y is None)
        if x is not None:
            assert np.array_equal(x, y)
    assert a.speculations == b.speculations


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), s=st.integers(1, 5), policy=st.sampled_from(POLICIES),
       b=st.floats(0, 2000), t=st.floats(0, 1000), short_first=st.booleans(),
       timer=st.booleans())
def test_equal_shapes_on_unit_pools_are_the_fast_path(seed, s, policy, b, t, short_first,
                                                      timer):
    """One job per server, FCFS: the mixed pool of equal shapes takes the Kiefer-Wolfowitz
    path too (no ``server`` column: the event path fills one) and gives the same run."""
    rng = np.random.default_rng(seed)
    n = 200
    sub = np.cumsum(rng.exponential(400.0 / s, n))
    rt = rng.exponential(500.0, n)
    cpu = rng.choice([2.0, 3.0, 9.0], n)  # 9: fits no server; two never share one
    mem = rng.choice([2.0, 8.0], n)
    old = PoolSpec(s, 3.0, 8.0)
    new = PoolSpec.mixed([(3, 8)] * s)
    pol = WaitingPolicy(policy, b, t)
    a = simulate(old, pol, sub, rt, cpu, mem, short_first=short_first, timer=timer)
    z = simulate(new, pol, sub, rt, cpu, mem, short_first=short_first, timer=timer)
    assert z.server is None  # the fast path
    _same(a, z)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), s=st.integers(1, 4), policy=st.sampled_from(POLICIES),
       placement=st.sampled_from(["best-fit", "first-fit"]),
       order=st.sampled_from(["fcfs", "sjf"]), wc=st.booleans(), b=st.floats(0, 2000),
       t=st.floats(0, 1000), timer=st.booleans(), observe=st.booleans())
def test_equal_shapes_are_the_identical_pool_on_the_event_path(seed, s, policy, placement,
                                                               order, wc, b, t, timer,
                                                               observe):
    """Several jobs per server, either placement and order, AJW-T and compound timers, the
    wait oracle (``observe`` forces the event path even on FCFS)."""
    rng = np.random.default_rng(seed)
    n = 120
    sub = np.cumsum(rng.exponential(30.0, n))
    rt = rng.exponential(400.0, n)
    cpu = rng.choice([1.0, 2.0, 4.0, 8.0, 20.0], n)
    mem = rng.choice([1.0, 4.0, 16.0, 40.0], n)
    est = rt * rng.uniform(0.5, 2.0, n)
    old = PoolSpec(s, 8.0, 32.0, placement, order, wc)
    new = PoolSpec.mixed(((8.0, 32.0),) * s, placement, order, wc)
    pol = WaitingPolicy(policy, b, t)
    seen: list[list] = [[], []]

    def run(spec, k):
        hook = (lambda j, x, w: seen[k].append((j, x, w))) if observe else None
        return simulate(spec, pol, sub, rt, cpu, mem, estimate=est, timer=timer,
                        observe=hook)

    _same(run(old, 0), run(new, 1))
    assert seen[0] == seen[1]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), policy=st.sampled_from(POLICIES),
       placement=st.sampled_from(["best-fit", "first-fit"]),
       order=st.sampled_from(["fcfs", "sjf"]), wc=st.booleans(), b=st.floats(0, 2000),
       shapes=st.lists(st.sampled_from([(2.0, 8.0), (4.0, 16.0), (8.0, 32.0), (16.0, 64.0),
                                        (2.0, 64.0), (16.0, 8.0)]), min_size=1, max_size=4))
def test_each_server_holds_at_most_its_own_shape(seed, policy, placement, order, wc, b,
                                                 shapes):
    """Unequal shapes: a job runs on a server it fits, never over that server's own cores
    or GiB; it goes to the cloud unfit only if no shape holds it."""
    rng = np.random.default_rng(seed)
    n = 120
    sub = np.cumsum(rng.exponential(30.0, n))
    rt = rng.exponential(400.0, n)
    cpu = rng.choice([1.0, 2.0, 4.0, 8.0, 20.0], n)
    mem = rng.choice([1.0, 4.0, 16.0, 40.0], n)
    spec = PoolSpec.mixed(shapes, placement, order, wc)
    run = simulate(spec, WaitingPolicy(policy, b, 300.0), sub, rt, cpu, mem)
    fit_any = np.zeros(n, bool)
    for c, m in shapes:
        fit_any |= (cpu <= c) & (mem <= m)
    assert (run.fits == fit_any).all() and (run.cloud[~fit_any]).all()
    assert np.all(run.start >= sub - 1e-9) and np.allclose(run.wait, run.start - sub)
    for k, (cap_c, cap_m) in enumerate(shapes):
        mine = np.nonzero(run.server == k)[0]
        ev = sorted([(run.start[j] + rt[j], 0, -cpu[j], -mem[j]) for j in mine]
                    + [(run.start[j], 1, cpu[j], mem[j]) for j in mine])
        c = m = 0.0
        for _, _, dc, dm in ev:
            c += dc
            m += dm
            assert c <= cap_c + 1e-9 and m <= cap_m + 1e-9
    if policy == "ajw":
        assert not run.cloud[run.fits].any()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), policy=st.sampled_from(["sww", "compound"]),
       b=st.floats(100, 3000),
       shapes=st.lists(st.sampled_from([(2.0, 8.0), (4.0, 16.0), (8.0, 32.0)]),
                       min_size=1, max_size=3))
def test_the_wait_oracle_sees_each_servers_shape(seed, policy, b, shapes):
    """Strict FCFS (no job passes another): a job the oracle keeps starts exactly when the
    oracle foresaw, on unequal servers as on equal ones."""
    rng = np.random.default_rng(seed)
    n = 80
    sub = np.cumsum(rng.exponential(40.0, n))
    rt = rng.exponential(400.0, n)
    cpu = rng.choice([1.0, 2.0, 4.0, 8.0], n)
    mem = rng.choice([1.0, 4.0, 16.0], n)
    foreseen = {}
    run = simulate(PoolSpec.mixed(shapes, work_conserving=False),
                   WaitingPolicy(policy, b, 0.0), sub, rt, cpu, mem,
                   observe=lambda j, x, w: foreseen.__setitem__(j, w))
    kept = [j for j, w in foreseen.items() if w <= b]
    for j in kept:
        assert not run.cloud[j] and run.wait[j] == pytest.approx(foreseen[j], abs=1e-6)
    for j, w in foreseen.items():
        if w > b:
            assert run.cloud[j]


def _two_types(placement):
    """A large server (8 cores, 32 GiB) given first, a small one (2, 8) second."""
    spec = PoolSpec.mixed([(8, 32), (2, 8)], placement)
    sub = np.array([0.0, 10.0, 20.0, 60.0])
    rt = np.array([50.0, 100.0, 30.0, 10.0])
    cpu = np.array([1.0, 6.0, 16.0, 3.0])
    mem = np.array([2.0, 24.0, 4.0, 8.0])
    return simulate(spec, WaitingPolicy("ajw"), sub, rt, cpu, mem)


def test_a_two_type_pool_by_hand():
    """Job 0 (1 core) fits both: best fit takes the small server (2 free cores < 8), first
    fit the large one (first in order). Job 1 (6 cores) fits only the large one; job 2 (16
    cores) no server (the cloud); job 3 (3 cores) arrives at 60 to an idle small server
    it does not fit and waits for job 1 to free the large one at 110."""
    best = _two_types("best-fit")
    assert best.server.tolist() == [1, 0, -1, 0]
    assert best.fits.tolist() == [True, True, False, True]
    assert best.cloud.tolist() == [False, False, True, False]
    assert best.start.tolist() == [0.0, 10.0, 20.0, 110.0]
    assert best.wait.tolist() == [0.0, 0.0, 0.0, 50.0]
    first = _two_types("first-fit")
    assert first.server.tolist() == [0, 0, -1, 0]
    assert first.start.tolist() == best.start.tolist()


def test_unequal_shapes_take_the_event_path():
    """Three 1-core jobs at once on servers of 1 and 2 cores: two share the 2-core server,
    none waits (the one-job-per-server recursion would make the third wait). Two 3-core
    jobs at once on servers of 2 and 3 cores (no two jobs could share either): one runs,
    the other waits for the one server it fits (the recursion would start it on the
    2-core server)."""
    run = simulate(PoolSpec.mixed([(1, 4), (2, 8)]), WaitingPolicy("ajw"), np.zeros(3),
                   np.full(3, 100.0), np.ones(3), np.full(3, 4.0))
    assert run.server.tolist() == [0, 1, 1] and run.wait.tolist() == [0.0, 0.0, 0.0]
    run = simulate(PoolSpec.mixed([(2, 8), (3, 8)]), WaitingPolicy("ajw"), np.zeros(3),
                   np.full(3, 100.0), np.array([3.0, 3.0, 2.0]), np.full(3, 4.0))
    assert run.server.tolist() == [1, 1, 0] and run.wait.tolist() == [0.0, 100.0, 0.0]


def test_best_fit_takes_the_first_of_equals():
    """Servers in the order given: of two small servers with equal room, the first."""
    run = simulate(PoolSpec.mixed([(8, 32), (2, 8), (2, 8)]), WaitingPolicy("ajw"),
                   np.array([0.0, 1.0, 2.0]), np.full(3, 100.0), np.ones(3),
                   np.full(3, 2.0))
    # 1st: rooms 8, 2, 2 -> server 1; 2nd: 8, 1, 2 -> server 1 (fewest); 3rd: 8, 0, 2 -> 2
    assert run.server.tolist() == [1, 1, 2]
    run = simulate(PoolSpec.mixed([(8, 32), (2, 8), (2, 8)]), WaitingPolicy("ajw"),
                   np.array([0.0, 1.0]), np.full(2, 100.0), np.full(2, 2.0), np.full(2, 2.0))
    assert run.server.tolist() == [1, 2]


def test_a_mix_bills_each_servers_rate():
    run = _two_types("best-fit")
    sub = np.array([0.0, 10.0, 20.0, 60.0])
    rt = np.array([50.0, 100.0, 30.0, 10.0])
    cpu = np.array([1.0, 6.0, 16.0, 3.0])
    out = summarize(run, sub, rt, cpu, [3.0, 1.0], 2, np.full(4, 5.0), 1.0)
    assert out["horizon_h"] == pytest.approx(120 / 3600, abs=1e-4)
    assert out["reserved_cost_usd"] == pytest.approx(4.0 * 120 / 3600, abs=1e-4)
    assert out["cloud_cost_usd"] == 5.0
    with pytest.raises(ConfigError):
        summarize(run, sub, rt, cpu, [3.0], 2, np.full(4, 5.0), 1.0)


def test_mixed_specs_are_checked():
    spec = PoolSpec.mixed([(8, 32), (2, 64)])
    assert (spec.servers, spec.cores, spec.mem_gib) == (2, 8.0, 64.0)
    assert not spec.uniform and PoolSpec.mixed([(2, 8)] * 3).uniform
    assert spec.total_cores() == 10.0
    with pytest.raises(ConfigError, match="at least one server"):
        PoolSpec.mixed([])
    with pytest.raises(ConfigError, match="positive"):
        PoolSpec.mixed([(0, 4)])
    with pytest.raises(ConfigError, match="PoolSpec.mixed"):
        PoolSpec(3, 8.0, 64.0, shapes=((8, 32), (2, 64)))


# --- the command: --reserved-mix ------------------------------------------------------------
GOOGLE = ["--trace", "synthetic:google?scale=0.02", "--hours", "4", "--seed", "2"]


def _cli(capsys, *argv) -> dict:
    assert main(["waiting", "simulate", *GOOGLE, *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_mix_of_one_type_is_that_pool(capsys):
    """``--reserved-mix T:S`` is ``--reserved S --reserved-type T``, number for number."""
    pol = ["--policy", "ajw-t", "--b", "600", "--packing", "first-fit"]
    one = _cli(capsys, "--reserved", "3", "--reserved-type", "m5.2xlarge", *pol)
    mix = _cli(capsys, "--reserved-mix", "m5.2xlarge:3", *pol)
    assert mix["reserved_mix"] == "m5.2xlarge:3" and "server_type" not in mix
    assert one["server_type"] == "m5.2xlarge" and "reserved_mix" not in one
    shared = (set(one) & set(mix)) - {"reserved_mix"}
    assert {k: one[k] for k in shared} == {k: mix[k] for k in shared}
    assert mix["reserved_hourly"] == pytest.approx(3 * one["server_reserved_hourly"], abs=1e-5)
    assert one["on_demand_fraction"] > 0 and one["mean_wait_s"] > 0


def test_a_two_type_mix_is_billed_server_by_server(capsys):
    """Each server at (1 - D) x its type's on-demand rate for the whole horizon; the API's
    ``reserved_mix=`` is the same run."""
    import stratus

    doc = _cli(capsys, "--reserved-mix", " m5.4xlarge:1 , m5.large:2", "--reserved-discount",
               "0.5", "--policy", "njw")
    assert doc["reserved"] == 3 and doc["reserved_mix"] == "m5.4xlarge:1,m5.large:2"
    assert doc["reserved_hourly"] == pytest.approx(0.5 * (0.768 + 2 * 0.096))
    assert doc["reserved_ondemand_hourly"] == pytest.approx(0.768 + 2 * 0.096)
    assert doc["reserved_cost_usd"] == pytest.approx(doc["reserved_hourly"] * doc["horizon_h"],
                                                     rel=1e-3)
    assert doc["total_cost_usd"] == pytest.approx(doc["reserved_cost_usd"]
                                                  + doc["cloud_cost_usd"], abs=1e-3)
    api = stratus.waiting.simulate(GOOGLE[1], policy="njw", hours=4, seed=2,
                                   reserved_mix="m5.4xlarge:1,m5.large:2",
                                   reserved_discount=0.5)
    assert api == doc
    # without a discount: the catalog's reserved rates, as the replay prices --reserved
    from stratus.commitments.reserved import reserved_rate
    from stratus.pricing.catalog_files import get_catalog

    m5 = get_catalog("m5")
    doc = _cli(capsys, "--reserved-mix", "m5.4xlarge:1,m5.large:2", "--policy", "njw")
    assert doc["reserved_hourly"] == pytest.approx(
        reserved_rate(m5["m5.4xlarge"], None) + 2 * reserved_rate(m5["m5.large"], None),
        abs=1e-6)


def test_the_overflow_of_a_mix_replays_through_a_vc_scheduler(capsys):
    base = ["--reserved-mix", "m5.4xlarge:2,m5.xlarge:4", "--policy", "njw"]
    vm = _cli(capsys, *base)
    vc = _cli(capsys, *base, "--cloud", "task-per-instance", "--market", "on-demand")
    assert vc["on_demand_fraction"] == vm["on_demand_fraction"] > 0
    assert vc["cloud_replay"]["tasks"] == round(vm["on_demand_fraction"] * vm["jobs"])
    assert vc["reserved_cost_usd"] == vm["reserved_cost_usd"]
    assert vc["total_cost_usd"] == pytest.approx(vc["reserved_cost_usd"] + vc["cloud_cost_usd"],
                                                 abs=1e-3)
    assert vc["reserved_mix"] == "m5.4xlarge:2,m5.xlarge:4"


@pytest.mark.parametrize(("argv", "what"), [
    (["--reserved-mix", "m5.huge:2"], "--reserved-mix: unknown instance type 'm5.huge'"),
    (["--reserved-mix", "m5.large:2", "--reserved", "2"], "not both (also given: --reserved)"),
    (["--reserved-mix", "m5.large:2", "--reserved-type", "m5.large"],
     "not both (also given: --reserved-type)"),
    (["--reserved-mix", "m5.large:2", "--reserved-cores", "2", "--reserved-mem-gb", "8"],
     "also given: --reserved-cores, --reserved-mem-gb"),
    (["--reserved-mix", "m5.large:0"], "--reserved-mix: 'm5.large:0': the count must be"),
    (["--reserved-mix", "m5.large:2,m5.large:1"], "--reserved-mix: type 'm5.large' given"),
    (["--reserved-mix", "m5.large"], "--reserved-mix: 'm5.large' is not TYPE:COUNT"),
    ([], "needs --reserved S (with its server) or --reserved-mix"),
])
def test_bad_mixes_are_one_line(argv, what, capsys):
    assert main(["waiting", "simulate", "--trace", "synthetic:mms?hours=1", "--policy", "njw",
                 *argv]) == 2
    err = capsys.readouterr().err
    assert what in err and err.count("\n") == 1


def test_the_api_takes_a_mix_and_names_its_keyword():
    import stratus

    with pytest.raises(ConfigError, match="^reserved_mix: unknown instance type"):
        stratus.waiting.simulate("synthetic:mms?hours=1", policy="njw", reserved_mix="x:1")
    with pytest.raises(ConfigError, match="reserved_mix is the whole pool"):
        stratus.waiting.simulate("synthetic:mms?hours=1", 2, "njw", reserved_mix="m5.large:1")
