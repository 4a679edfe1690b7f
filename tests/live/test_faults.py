"""The live loop's fault paths, each against the local servers: throttling and 5xx,
insufficient capacity, a spot interruption, a node gone NotReady, a pod deleted under it,
and a restart that re-adopts what it launched."""

from __future__ import annotations

import pytest

from tests.live.conftest import small_trace
from tests.live.harness import finish, start

pytestmark = pytest.mark.slow
N = 60  # tasks: enough for several instances at once


@pytest.fixture
def proxy(moto_url):
    from tests.live.servers import FaultProxy

    p = FaultProxy(moto_url)
    yield p
    p.close()


def all_done(run) -> None:
    world, loop = run.world, run.loop
    assert world.finished(), f"{len(world.done_keys)} of {len(world.runtime)} tasks ended"
    assert not loop.mirror.cloud.busy() and not loop.outbox
    # nothing it launched is left running untracked
    running = {i["InstanceId"] for i in world._instances()}
    assert running <= set(loop.by_ext), running - set(loop.by_ext)


def test_throttling_and_5xx_are_retried_or_skip_the_tick(moto_url, kmock_url, proxy):
    from tests.live.servers import PODS, inject_faults, refuse_bindings

    trace = small_trace(N)
    run = start(trace, "stratus", moto_url, kmock_url, cluster="f-throttle",
                aws_url=proxy.url, max_attempts=2)
    # EC2: the first launch throttled (botocore retries once, then the launch fails and
    # its tasks wait a tick); a DescribeInstances that fails twice fails the tick's read
    proxy.fail("RunInstances", 503, "RequestLimitExceeded", 2)
    proxy.fail("DescribeInstances", 500, "InternalError", 2)
    # Kubernetes: the first binding refused for good (403): dropped, the task pending again
    kmock_url.call(refuse_bindings, kmock_url.emulator)
    run.loop.run(until=600.0)
    assert run.loop.mirror.cloud.launch_failures >= 1
    assert run.loop.stats.skipped_ticks >= 1
    assert sum("refused: dropped" in e for e in run.loop.stats.errors) == 1
    # Kubernetes: 429/500/503 retried (tenacity) within a read; then a read that keeps
    # failing (more than the 5 attempts) is given up: that wake-up (or tick) is skipped
    def failed_reads():
        return sum("observation failed" in e for e in run.loop.stats.errors)

    before = failed_reads()
    kmock_url.call(inject_faults, kmock_url.emulator, [429, 500, 503], "list", PODS)
    run.loop.run(ticks=1)
    assert failed_reads() == before
    kmock_url.call(inject_faults, kmock_url.emulator, [503] * 5, "list", PODS)
    run.loop.run(ticks=1)
    assert failed_reads() == before + 1
    finish(run)
    all_done(run)
    assert len(proxy.failed) == 4


def test_insufficient_capacity_marks_the_type_short(moto_url, kmock_url, proxy):
    trace = small_trace(N)
    short = "m4.xlarge"
    run = start(trace, "stratus", moto_url, kmock_url, cluster="f-ice", aws_url=proxy.url,
                max_attempts=2, loop_kw={"ice_window_s": 600.0})
    proxy.fail("RunInstances", 500, "InsufficientInstanceCapacity", 10_000, itype=short)
    finish(run)
    all_done(run)
    cloud = run.loop.mirror.cloud
    assert cloud.ice_failures >= 1 and cloud.ice_shortages >= 1
    first = cloud.failed_requests[0]
    assert first[1] == short
    # known short: while the window lasts no launch of it is even tried (one call per
    # shortage, as the engine's ICE model), and none succeeded
    assert sum(1 for a, _ in proxy.failed if a == "RunInstances") // 2 == cloud.ice_shortages
    assert not any(short in what for kind, what in run.capacity.calls if kind == "launch")


def test_interruption_notready_and_vanished_pods(moto_url, kmock_url):
    trace = small_trace(N)
    # two pods deleted by someone else: one 10 s after the tick that placed it (waiting
    # for its instance to come up), one long after its start (running)
    import math

    sub = trace.frame["submit_s"]
    names = [f"t{k:05d}" for k in (N - 1, 3)]
    placed = math.ceil(sub.iat[N - 1] / 60.0) * 60.0
    run = start(trace, "stratus", moto_url, kmock_url, cluster="f-lost", queue=True,
                interrupt=[(300.0, 1)], not_ready=[600.0],
                vanish=[(placed + 10.0, names[0]), (sub.iat[3] + 400.0, names[1])])
    finish(run)
    all_done(run)
    m, stats = run.loop.mirror, run.loop.stats
    # the warning came through EventBridge and SQS; two minutes on the instance went and
    # its tasks went back to the queue (re-created pods), and ran elsewhere
    assert run.world.interrupted and stats.warnings == 1 and m.cloud.revocations == 1
    assert m.acct.tasks_revoked >= 1
    requeued = [w for k, w in run.work.calls if k == "create" and "-r" in w]
    assert len(requeued) >= m.acct.tasks_revoked
    # the NotReady node: its instance is treated as crashed, its tasks re-run, and it is
    # terminated
    assert m.cloud.crashes == 1 and m.acct.crash_restarts >= 1
    (dead,) = run.world.not_ready_nodes
    assert ("terminate", dead) in run.capacity.calls
    # the deleted pods: one pending, one running; both gone from the mirror
    assert m.vanished == 2 and run.world.vanished == set(names)


def test_restart_readopts_by_tag(moto_url, kmock_url):
    import boto3

    from stratus.app.registry import make_scheduler
    from stratus.live.ec2 import CLUSTER_TAG
    from stratus.live.loop import LiveLoop
    from tests.live.conftest import two_world_cfg
    from tests.live.servers import aws_kw

    trace = small_trace(N)
    run = start(trace, "stratus", moto_url, kmock_url, cluster="f-restart")
    run.loop.run(until=900.0)
    before = dict(run.loop.by_ext)
    running = sum(1 for s in run.loop.mirror.book.state if s == 2)
    assert before and running, "the first loop should have instances and running tasks"
    # the loop dies; a new one starts on the same cluster, with nothing in memory
    ec2 = boto3.client("ec2", **aws_kw(moto_url))
    stray = ec2.run_instances(ImageId="ami-12345678", InstanceType="m4.large", MinCount=1,
                              MaxCount=1, TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                  {"Key": CLUSTER_TAG, "Value": "f-restart"}]}])
    stray_id = stray["Instances"][0]["InstanceId"]
    loop2 = LiveLoop(make_scheduler("stratus"), two_world_cfg(), run.work, run.capacity,
                     run.clock)
    run.loop = loop2
    loop2.run(ticks=1)
    assert loop2.stats.adopted_instances == len(before) + 1
    assert loop2.stats.adopted_tasks >= running
    # the stray tagged instance had no tasks: released (terminated) as the engine would
    assert ("terminate", stray_id) in run.capacity.calls
    finish(run)
    all_done(run)
    # no task ran twice: each task's first pod or its re-creations, one success each
    assert len(run.world.done_keys) == N and len(run.world.done) == N
