"""One trace, two worlds: the engine's replay and the live loop against moto and kmock
give the same decisions at the same ticks, and the same instances (docs/guides/live.md)."""

from __future__ import annotations

import pytest

from tests.live.conftest import small_trace, two_world_cfg

pytestmark = pytest.mark.slow


def engine_run(trace, name: str, **cfg):
    from stratus.app.registry import make_scheduler
    from stratus.live.loop import canonical
    from stratus.sim.engine import Engine

    eng = Engine(trace, make_scheduler(name), two_world_cfg(**cfg))
    log: list[dict] = []
    eng.on_decisions = lambda t, dec: log.append(canonical(t, dec))
    res = eng.run()
    return eng, res, log


def ledger_rows(ledger):
    return [(ledger.iid[k], ledger.types[ledger.type_code[k]].name,
             ledger.markets[ledger.market_code[k]], ledger.requested[k], ledger.ready[k],
             ledger.released[k]) for k in range(len(ledger))]


def live_run(trace, name: str, moto_url: str, kmock_url: str, **cfg):
    from tests.live.harness import finish, start

    run = finish(start(trace, name, moto_url, kmock_url, cfg=two_world_cfg(**cfg),
                       cluster=trace.frame["user"].iat[0]))
    return run.loop, run.world, run.capacity


def history():
    from stratus.policy.history import HistoryEstimator

    return HistoryEstimator()


# the estimates: the oracle's in the engine, the pods' annotations (the true runtimes) live;
# and a history estimator on both sides, which learns from runtimes as tasks end (live: the
# runtimes observed)
@pytest.mark.parametrize("name,estimator", [("stratus", None), ("fleet", None),
                                            ("karpenter", None), ("stratus", history),
                                            ("eva?period=60", None)])
def test_two_worlds_decide_alike(name, estimator, moto_url, kmock_url):
    # live, a task's user is its pod's namespace, and its job name the estimate key
    # 80 tasks: every kind of decision batch still comes (> 10 of them, migrations under
    # stratus), at half the cost of the live loop's HTTP round trips
    # eva: 40 tasks (its rounds every 60 s still give > 10 batches, migrations among them)
    n = 40 if name.startswith("eva") else 80
    trace = small_trace(n, user=f"tw-{name.partition('?')[0]}-{estimator is not None:d}")
    cfg = {} if estimator is None else {"estimator": estimator()}
    eng, res, elog = engine_run(trace, name, **cfg)
    cfg = {} if estimator is None else {"estimator": estimator()}
    loop, world, capacity = live_run(trace, name, moto_url, kmock_url, **cfg)
    assert res.summary["tasks_unfinished"] == 0
    assert world.finished(), "the live world did not finish every task"
    # the engine's replay ends with the last task (kept instances are released then); the
    # live loop goes on, and may only release idle instances after that
    end = eng.now
    llog = [e for e in loop.decisions if e["t"] <= end]
    assert all(not (e["acquire"] or e["place"] or e["migrate"])
               for e in loop.decisions if e["t"] > end)
    assert len(elog) > 10
    for k, (a, b) in enumerate(zip(elog, llog)):
        assert a == b, f"decision batch {k} differs"
    assert len(elog) == len(llog)
    # every task started and ended at the same times, in the mirror and in the world
    book, mbook = eng.book, loop.mirror.book
    assert list(book.first_start) == list(mbook.first_start)
    assert list(book.finish) == list(mbook.finish)
    assert book.n_migrations == mbook.n_migrations
    ns = loop.work.namespace
    assert [world.finish_at[f"{ns}/t{k:05d}"] for k in range(len(trace))] == list(book.finish)
    # the same instances, requested, up and released at the same times
    erows = [r for r in ledger_rows(eng.cloud.ledger) if r[5] < end]
    lrows = sorted(ledger_rows(loop.mirror.cloud.ledger))
    assert sorted(erows) == [r for r in lrows if r[5] < end]
    # and the cloud saw them: one launch per instance, every one terminated or kept
    launched = [c for c in capacity.calls if c[0] == "launch"]
    assert len(launched) == len(ledger_rows(eng.cloud.ledger))
    assert loop.stats.skipped_ticks == 0 and not loop.outbox
