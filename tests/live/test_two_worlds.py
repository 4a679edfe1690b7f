"""One trace, two worlds: the engine's replay and the live loop against moto and kmock
give the same decisions at the same ticks, and the same instances (docs/live.md)."""

from __future__ import annotations

import pytest

from tests.live.conftest import small_trace, two_world_cfg

pytestmark = pytest.mark.slow


def engine_run(trace, name: str):
    from stratus.app.registry import make_scheduler
    from stratus.engine import Engine
    from stratus.live.loop import canonical

    eng = Engine(trace, make_scheduler(name), two_world_cfg())
    log: list[dict] = []
    eng.on_decisions = lambda t, dec: log.append(canonical(t, dec))
    res = eng.run()
    return eng, res, log


def ledger_rows(ledger):
    return [(ledger.iid[k], ledger.types[ledger.type_code[k]].name,
             ledger.markets[ledger.market_code[k]], ledger.requested[k], ledger.ready[k],
             ledger.released[k]) for k in range(len(ledger))]


def live_run(trace, name: str, moto_url: str, kmock_url: str, **world_kw):
    import boto3

    from stratus.app.registry import make_scheduler
    from stratus.live.clock import ManualClock
    from stratus.live.ec2 import Ec2Capacity
    from stratus.live.kube import KubeWork
    from stratus.live.loop import LiveLoop
    from tests.live.servers import aws_kw, make_api
    from tests.live.world import SimWorld

    cluster = f"tw-{name}-{id(trace)}"
    ns = cluster
    capacity = Ec2Capacity(cluster, "ami-12345678", **aws_kw(moto_url))
    core = make_api(kmock_url)
    work = KubeWork(core.api_client, namespace=ns)
    world = SimWorld(trace, boto3.client("ec2", **aws_kw(moto_url)),
                     boto3.client("events", **aws_kw(moto_url)), core, None, cluster,
                     namespace=ns, calls=lambda: (capacity.changes, work.changes), kmock=kmock_url,
                     **world_kw)
    clock = ManualClock(world=world)
    world.clock = clock
    loop = LiveLoop(make_scheduler(name), two_world_cfg(), work, capacity, clock)
    loop.run(until=6 * 3600.0,
             stop=lambda: world.finished() and not loop.mirror.cloud.busy())
    return loop, world, capacity


@pytest.mark.parametrize("name", ["stratus", "fleet", "karpenter"])
def test_two_worlds_decide_alike(name, moto_url, kmock_url):
    trace = small_trace()
    eng, res, elog = engine_run(trace, name)
    loop, world, capacity = live_run(trace, name, moto_url, kmock_url)
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
    # the same instances, requested, up and released at the same times
    erows = [r for r in ledger_rows(eng.cloud.ledger) if r[5] < end]
    lrows = sorted(ledger_rows(loop.mirror.cloud.ledger))
    assert sorted(erows) == [r for r in lrows if r[5] < end]
    # and the cloud saw them: one launch per instance, every one terminated or kept
    launched = [c for c in capacity.calls if c[0] == "launch"]
    assert len(launched) == len(ledger_rows(eng.cloud.ledger))
    assert loop.stats.skipped_ticks == 0 and not loop.outbox
