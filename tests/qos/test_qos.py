"""Paper 001 (QoPS / VQoPS / DVQoPS, spec qos-and-sharing.md Part A): each rule on
hand-worked cases, and the invariants as hypothesis properties: no admitted job misses its
deadline, processor capacity is never exceeded, every job is decided exactly once."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratus.app.cli import main
from stratus.base.errors import ConfigError
from stratus.qos.jobs import Workload, build_workload, value
from stratus.qos.run import load_var, oc_var_avg, run, simulate
from stratus.qos.schedule import base_profile, earliest, positions, qops_candidates, reserve
from stratus.qos.sim import Config, Sim, accept_gain
from tests.helpers.paths import FIXTURES

FIX = FIXTURES


def wl_of(jobs, P, urgent=None, rate=0.1, C=10.0, slack=5.0):
    """A workload from (submit, e, p) or (submit, e, p, rt) rows, exact unless rt < e."""
    s = [float(j[0]) for j in jobs]
    e = [float(j[1]) for j in jobs]
    p = [int(j[2]) for j in jobs]
    rt = [float(j[3]) if len(j) > 3 else float(j[1]) for j in jobs]
    urgent = urgent or [False] * len(jobs)
    r = [rate * (C if u else 1.0) for u in urgent]
    return Workload(s, e, rt, p, [a + slack * b for a, b in zip(s, e)], list(urgent),
                    [ri * pi * ti for ri, pi, ti in zip(r, p, rt)],
                    [ri * pi * ei for ri, pi, ei in zip(r, p, e)],
                    [pi * ei for pi, ei in zip(p, e)], list(range(len(jobs))),
                    [False] * len(jobs), P, {"offered_load": None, "overrun_killed": 0,
                                             "overrun_extended": 0, "dropped_oversize": 0,
                                             "duplicates": 0})


# --- the rules, hand-worked ---------------------------------------------------------------


def test_probe_positions_follow_the_spec():
    assert positions(8) == (0, 4, 6, 7, 8)
    assert positions(10) == (0, 5, 8, 9, 10)
    assert positions(0) == (0,)
    assert positions(1) == (0, 1)
    assert positions(2) == (0, 1, 2)


def test_value_is_flat_then_linear_then_zero():
    # s=0, e=10, D=50: full until 10, half at 30, nothing from 50 on (001 Fig. 2, A-2)
    assert value(5, 8.0, 0, 10, 50) == 8.0
    assert value(10, 8.0, 0, 10, 50) == 8.0
    assert value(30, 8.0, 0, 10, 50) == pytest.approx(4.0)
    assert value(50, 8.0, 0, 10, 50) == 0.0
    assert value(99, 8.0, 0, 10, 50) == 0.0


def test_profile_list_scheduling_by_hand():
    # 4 processors; a running job holds 3 until t=10
    ts, fr = base_profile(0.0, 4, [(10.0, 3)])
    assert (ts, fr) == ([0.0, 10.0], [1, 4])
    assert earliest(ts, fr, 0.0, 1, 100.0) == 0.0
    assert earliest(ts, fr, 0.0, 2, 5.0) == 10.0
    reserve(ts, fr, 10.0, 5.0, 4)       # the whole machine over [10, 15)
    assert earliest(ts, fr, 0.0, 1, 20.0) == 15.0  # 1 free over [0,10), none over [10,15)
    assert earliest(ts, fr, 0.0, 1, 10.0) == 0.0   # fits exactly before the block
    reserve(ts, fr, 10.0, 5.0, -4)      # and back
    assert earliest(ts, fr, 0.0, 4, 1.0) == 10.0


def _hand_case():
    # P=4; a running job holds all 4 until t=10. Queued: A (p2, e10, D20) and B (p2, e10,
    # D40), both reserved at 10. New N (p4, e10, D30) arrives at 0.
    procs = {"A": 2, "B": 2, "N": 4}
    est = {"A": 10.0, "B": 10.0, "N": 10.0}
    deadline = {"A": 20.0, "B": 40.0, "N": 30.0}
    ts, fr = base_profile(0.0, 4, [(10.0, 4)])
    return ts, fr, ["A", "B"], {"A": 10.0, "B": 10.0}, procs, est, deadline


def test_qops_promotes_a_violator_ahead_of_the_new_job():
    ts, fr, queue, starts, procs, est, deadline = _hand_case()
    cands = qops_candidates(0.0, ts, fr, queue, starts, "N", 5, procs, est, deadline)
    # position 0: N at 10 pushes A to 20 (> its deadline 20 - 0 ... A ends 30 > 20): A is
    # promoted ahead of N: A 10, N 20, B 10. Position 1 (A kept): N 20, B 10. Position 2.
    assert cands == [(["A", "N", "B"], {"A": 10.0, "N": 20.0, "B": 10.0}),
                     (["A", "N", "B"], {"N": 20.0, "B": 10.0}),
                     (["A", "B", "N"], {"N": 20.0})]
    # with K = 0 no promotion is allowed: position 0 is infeasible
    k0 = qops_candidates(0.0, ts, fr, queue, starts, "N", 0, procs, est, deadline)
    assert [c[0] for c in k0] == [["A", "N", "B"], ["A", "B", "N"]]
    assert k0[0][1] == {"N": 20.0, "B": 10.0}
    # the input profile is not changed
    assert (ts, fr) == base_profile(0.0, 4, [(10.0, 4)])


def test_qops_rejects_when_the_new_job_cannot_meet_its_deadline():
    ts, fr, queue, starts, procs, est, deadline = _hand_case()
    deadline = dict(deadline, N=19.0)  # N cannot end before 20 anywhere
    assert qops_candidates(0.0, ts, fr, queue, starts, "N", 5, procs, est, deadline) == []


def test_the_opportunity_cost_test_is_strict_by_default():
    assert not accept_gain(0.1 * 37.0, 0.1 * 37.0 * (1 + 1e-12), "reject")
    assert not accept_gain(3.7, 3.7, "reject")
    assert accept_gain(3.7, 3.7, "accept")
    assert accept_gain(3.8, 3.7, "reject")
    assert not accept_gain(-1.0, 0.0, "accept")


def test_vqops_rejects_a_normal_job_at_f_01_and_accepts_it_at_005():
    wl = wl_of([(0, 10, 1)], P=2)  # a lone normal job: gain = 0.1 x size exactly
    assert run(wl, Config(scheme="vqops", oc=0.1)).summary["accepted"] == 0
    assert run(wl, Config(scheme="vqops", oc=0.1, oc_tie="accept")).summary["accepted"] == 1
    assert run(wl, Config(scheme="vqops", oc=0.05)).summary["accepted"] == 1
    urgent = wl_of([(0, 10, 1)], P=2, urgent=[True], C=2.0)
    assert run(urgent, Config(scheme="vqops", oc=0.2)).summary["accepted"] == 0
    assert run(urgent, Config(scheme="vqops", oc=0.1)).summary["accepted"] == 1


def test_vqops_net_gain_counts_the_value_lost_by_delayed_jobs():
    """P=1. Job 0 runs [0, 50). Urgent job 1 (e=100, Vmax 100, D=500) is queued at 50.
    Normal job 2 (e=100, Vmax 10, D=510) arrives at 10. Candidates: position 0 (2 then 1):
    2 ends 150, value 10 x (510-150)/400 = 9; 1 ends 250, 100 x 250/400 = 62.5; R = 71.5.
    Position 1 (1 then 2): 1 ends 150, 87.5; 2 ends 250, 10 x 260/400 = 6.5; R = 94.
    Now R = 87.5, so the net gain is 6.5 (job 2 alone would be worth 9 or 6.5)."""
    jobs = [(0, 50, 1), (0, 100, 1), (10, 100, 1)]
    wl = wl_of(jobs, P=1, urgent=[False, True, False], C=10.0)
    sim = simulate(wl, Config(scheme="vqops", oc=0.0))
    assert sorted(sim.accepted) == [0, 1, 2]
    assert (sim.start[1], sim.start[2]) == (50.0, 150.0)  # the revenue-maximizing schedule
    # price 0.05 x 100 = 5 < 6.5: accepted; 0.1 x 100 = 10 > 6.5: rejected
    assert 2 in simulate(wl, Config(scheme="vqops", oc=0.05)).accepted
    assert 2 not in simulate(wl, Config(scheme="vqops", oc=0.1)).accepted
    # QoPS keeps the first feasible candidate (job 2 at position 0) whatever it costs job 1
    q = simulate(wl, Config(scheme="qops"))
    assert sorted(q.accepted) == [0, 1, 2]
    assert (q.start[1], q.start[2]) == (150.0, 50.0)
    assert run(wl, Config(scheme="qops")).summary["revenue"] == pytest.approx(5 + 62.5 + 9)
    assert run(wl, Config(scheme="vqops")).summary["revenue"] == pytest.approx(5 + 87.5 + 6.5)


def test_early_completion_moves_reservations_earlier_only():
    # trace estimates: job 0 asks 100 s but runs 10; job 1 (p=2) was reserved after it
    jobs = [(0, 100, 2, 10), (1, 50, 2, 50)]
    wl = wl_of(jobs, P=2)
    sim = simulate(wl, Config(scheme="qops"))
    assert sim.start[1] == 10.0 and sim.counts.compressions == 1


def test_trace_estimates_need_requested_times():
    with pytest.raises(ConfigError, match="requested time"):
        build_workload([0], [5], [1], None, [1], P=4, estimates="trace", source="x.swf")


def test_duplicates_share_submit_estimate_runtime_and_deadline():
    rng = np.random.default_rng(3)
    n = 200
    s, rt = np.sort(rng.uniform(0, 1e5, n)), rng.uniform(1, 1e4, n)
    p, ids = rng.integers(1, 9, n), np.arange(n)
    wl = build_workload(s, rt, p, None, ids, P=8, dup_frac=1.0, urgent_frac=0.3, seed=1)
    assert len(wl) == 2 * n and wl.info["duplicates"] == n
    assert sum(wl.urgent) == round(0.3 * 2 * n)
    for i in range(0, 2 * n, 2):
        assert not wl.copy[i] and wl.copy[i + 1] and wl.job_id[i] == wl.job_id[i + 1]
        for col in (wl.submit, wl.est, wl.rt, wl.deadline, wl.procs):
            assert col[i] == col[i + 1]
    half = build_workload(s, rt, p, None, ids, P=8, dup_frac=1.5, seed=1)
    assert 1.35 * n < len(half) - 2 * n + n < 1.65 * n
    single = build_workload(s, rt, p, None, ids, P=4, seed=1)  # p > 4 dropped, counted
    assert single.info["dropped_oversize"] == int((p > 4).sum()) and max(single.procs) <= 4


def test_kill_semantics_and_extend():
    wl = build_workload([0, 1], [50, 5], [1, 1], [20, 10], [1, 2], P=2, estimates="trace")
    assert wl.rt == [20.0, 5.0] and wl.est == [20.0, 10.0] and wl.info["overrun_killed"] == 1
    assert wl.deadline == [100.0, 51.0]
    wl = build_workload([0, 1], [50, 5], [1, 1], [20, 10], [1, 2], P=2, estimates="trace",
                        overrun="extend")
    assert wl.rt == [50.0, 5.0] and wl.est == [50.0, 10.0]


def test_diagnostics_by_hand():
    assert oc_var_avg([(0, 0.0)] * 4) is None
    traj = [(i, f) for i, f in enumerate([0, 0, 0, 0, 0.1, 0.1])]
    # windows [0,0,0,0,.1] and [0,0,0,.1,.1]: variances 0.0016 and 0.0024
    assert oc_var_avg(traj) == pytest.approx(0.002)
    # two full 1-hour segments with loads 1 and 0 (one 3600 s job on P=1), a partial third
    wl = wl_of([(0, 3600, 1), (7300, 10, 1), (7400, 10, 1)], P=1)
    assert load_var(wl, 1.0) == pytest.approx(0.25)


def test_whatif_from_a_snapshot_replays_the_real_run():
    """Under exact estimates a what-if at the real run's f, started from the real run's
    snapshot, is the real run: the same code from the same state."""
    rng = np.random.default_rng(5)
    n = 300
    s = np.sort(rng.uniform(0, 40000, n))
    wl = build_workload(s, rng.exponential(600, n) + 1, rng.integers(1, 17, n), None,
                        np.arange(n), P=32, urgent_frac=0.5, seed=2)
    cfg = Config(scheme="vqops", oc=0.05)
    real = Sim(wl, cfg, keep_snapshots=True)
    real.horizon = float("inf")
    for i in range(len(wl)):
        real.advance(wl.submit[i])
        real.arrive(i)
    k, snap = next((k, sn) for k, sn in real.snaps if k >= len(wl) // 2)
    wi = Sim(wl, cfg, whatif=True, snapshot=snap)
    wi.replay_range(k, len(wl))
    assert wi.accepted == [j for j in real.accepted if j >= k]
    assert all(wi.start[j] == real.start[j] for j in wi.accepted)


# --- properties ---------------------------------------------------------------------------


@st.composite
def workloads(draw):
    P = draw(st.integers(1, 8))
    n = draw(st.integers(1, 22))
    rows = []
    for _ in range(n):
        rows.append((draw(st.integers(0, 300)), draw(st.integers(0, 80)),
                     draw(st.integers(1, P + 1)), draw(st.integers(1, 120))))
    rows[0] = (rows[0][0], rows[0][1], min(rows[0][2], P), rows[0][3])  # one job fits
    trace = draw(st.booleans())
    return dict(P=P, rows=rows, trace=trace, overrun=draw(st.sampled_from(["kill", "extend"])), d=draw(st.sampled_from([0.0, 0.5, 1.3])),
                u=draw(st.sampled_from([0.0, 0.5, 1.0])), c=draw(st.sampled_from([2.0, 10.0])),
                seed=draw(st.integers(0, 3)))


def _build(w):
    s, rt, p, req = zip(*w["rows"])
    return build_workload(list(s), list(rt), list(p), list(req) if w["trace"] else None,
                          list(range(len(s))), P=w["P"],
                          estimates="trace" if w["trace"] else "exact", overrun=w["overrun"],
                          dup_frac=w["d"],
                          urgent_frac=w["u"], urgent_cost=w["c"], seed=w["seed"])


CONFIGS = [Config(scheme="qops"), Config(scheme="qops", K=0), Config(scheme="vqops", oc=0.0),
           Config(scheme="vqops", oc=0.1, oc_tie="accept"), Config(scheme="vqops", oc=0.4),
           # DVQoPS at toy scale: windows of 36-144 s so that updates happen
           Config(scheme="dvqops", windows_h=(0.01, 0.02), wmax_h=0.04, w_init_h=0.02),
           Config(scheme="dvqops", window="fixed", w_init_h=0.01, whatif_start="empty")]


@pytest.mark.slow
@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=workloads(), ci=st.integers(0, len(CONFIGS) - 1))
def test_deadlines_capacity_and_one_decision_per_job(w, ci):
    """Every admitted job completes by its deadline (exact estimates; and under trace
    estimates, killed at the estimate or with the estimate extended to the runtime, since
    then no job runs past its estimate and reservations only move earlier); processors
    in use never exceed P; each job is accepted or rejected exactly once, and a rejected
    job never runs."""
    wl = _build(w)
    cfg = CONFIGS[ci]
    sim = simulate(wl, cfg)
    out = run(wl, cfg)
    n = len(wl)
    assert sim.counts.decided == n and len(sim.accepted) + sim.counts.rejected == n
    assert len(set(sim.accepted)) == len(sim.accepted)
    assert not sim.queue and not sim.running  # everything admitted ran to completion
    acc = set(sim.accepted)
    events = []
    for j in range(n):
        if j in acc:
            st_, c = sim.start[j], sim.start[j] + wl.rt[j]
            assert st_ >= wl.submit[j]
            assert c <= wl.deadline[j] + 1e-6
            events += [(st_, 1, wl.procs[j]), (c, 0, -wl.procs[j])]
        else:
            assert j not in sim.start or j in acc
    used = 0
    for _, _, dp in sorted(events):  # ends before starts at equal times
        used += dp
        assert used <= wl.P
    s = out.summary
    assert s["deadline_violations"] == 0 and s["max_processors_used"] <= wl.P
    vals = np.array(out.jobs["value"])
    vmax = np.array(out.jobs["vmax"])
    assert ((vals >= 0) & (vals <= vmax + 1e-9)).all()
    assert vals.sum() == pytest.approx(s["revenue"], rel=1e-9, abs=1e-9)
    assert (vals[~np.array(out.jobs["accepted"])] == 0).all()


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(w=workloads())
def test_runs_are_deterministic(w):
    cfg = Config(scheme="dvqops", windows_h=(0.01, 0.02), wmax_h=0.04, w_init_h=0.01)
    a = json.dumps(run(_build(w), cfg).summary)
    b = json.dumps(run(_build(w), cfg).summary)
    assert a == b


# --- the command line ---------------------------------------------------------------------


def test_cli_run_json_save_and_errors(tmp_path, capsys):
    swf = FIX / "swf" / "small.swf"
    code = main(["qos", "run", "--trace", str(swf), "--scheme", "dvqops", "--json",
                 "--estimates", "trace", "--save", str(tmp_path / "out")])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    doc = json.loads(cap.out)
    assert doc["deadline_violations"] == 0 and doc["processors"] == 64
    assert "oc_trajectory" in doc and "window_trajectory" in doc
    import pandas as pd

    jobs = pd.read_parquet(tmp_path / "out" / "jobs.parquet")
    assert len(jobs) == doc["jobs"] and jobs["value"].sum() == pytest.approx(doc["revenue"])
    # a trace without requested times refuses trace estimates, naming the field
    csv = tmp_path / "t.swf"
    csv.write_text(swf.read_text().replace(" 200 ", "  -1 "))
    assert main(["qos", "run", "--trace", str(csv), "--estimates", "trace"]) == 2
    assert "requested time" in capsys.readouterr().err
    assert main(["qos", "run", "--trace", str(swf), "--dv-window", "fixed:0"]) == 2
    assert "--dv-window" in capsys.readouterr().err
    assert main(["qos", "sweep", "--trace", "synthetic:mms?lam=0.01", "--hours", "1"]) == 2
    assert "--processors" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_sweep_table_and_plot(tmp_path, capsys):
    swf = FIX / "swf" / "small.swf"
    png = tmp_path / "t.png"
    code = main(["qos", "sweep", "--trace", str(swf), "--ocs", "0,0.1", "--urgent-fracs",
                 "0.5", "--urgent-costs", "2,10", "--dup-fracs", "0,1", "--json", "--plot",
                 str(png)])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    doc = json.loads(cap.out)
    assert len(doc["runs"]) == 2 * 2 * 4
    assert all(r["improvement_pct"] == 0 for r in doc["runs"] if r["scheme"] == "qops")
    assert png.read_bytes()[:4] == b"\x89PNG"
