"""Running the live loop against the local servers, with the simulated world behind them."""

from __future__ import annotations

from dataclasses import dataclass

from tests.live.conftest import two_world_cfg


@dataclass
class Run:
    loop: object
    world: object
    capacity: object
    work: object
    clock: object


def interruption_queue(aws: dict, name: str) -> str:
    """An SQS queue fed by an EventBridge rule for spot interruption warnings (as
    docs/guides/live.md sets up in a real account); its URL."""
    import json

    import boto3

    sqs, events = boto3.client("sqs", **aws), boto3.client("events", **aws)
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"]
    events.put_rule(Name=name, EventPattern=json.dumps(
        {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]}))
    events.put_targets(Rule=name, Targets=[{"Id": "queue", "Arn": arn}])
    return url


def start(trace, name: str, moto_url: str, kmock_url, *, cluster: str,
          aws_url: str | None = None, queue: bool = False, cfg=None, max_attempts: int = 5,
          loop_kw: dict | None = None, **world_kw) -> Run:
    """A loop for scheduler ``name`` and its world, not yet run. ``aws_url``: where the loop
    sends its AWS calls (a fault proxy), default moto."""
    import boto3

    from stratus.app.registry import make_scheduler
    from stratus.live.clock import ManualClock
    from stratus.live.ec2 import Ec2Capacity
    from stratus.live.kube import KubeWork
    from stratus.live.loop import LiveLoop
    from tests.live.servers import aws_kw, make_api
    from tests.live.world import SimWorld

    qurl = interruption_queue(aws_kw(moto_url), cluster) if queue else None
    capacity = Ec2Capacity(cluster, "ami-12345678", queue_url=qurl, max_attempts=max_attempts,
                           **aws_kw(aws_url or moto_url))
    core = make_api(kmock_url)
    work = KubeWork(core.api_client, namespace=cluster, wait_s=(0.01, 0.05))
    world = SimWorld(trace, boto3.client("ec2", **aws_kw(moto_url)),
                     boto3.client("events", **aws_kw(moto_url)), core, None, cluster,
                     namespace=cluster, calls=lambda: (capacity.changes, work.changes),
                     kmock=kmock_url, **world_kw)
    clock = ManualClock(world=world)
    world.clock = clock
    # DescribeInstances costs ~0.2 s on moto with a few dozen instances: every 30 minutes
    # here (the node list shows a lost instance at once)
    loop = LiveLoop(make_scheduler(name), cfg or two_world_cfg(), work, capacity, clock,
                    **{"describe_every_s": 1800.0, **(loop_kw or {})})
    return Run(loop, world, capacity, work, clock)


def finish(run: Run, until: float = 6 * 3600.0) -> Run:
    """Run the loop until every task of the world ended and no instance is busy."""
    loop, world = run.loop, run.world
    loop.run(until=until, stop=lambda: world.finished() and not loop.mirror.cloud.busy())
    return run
