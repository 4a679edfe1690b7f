"""Capacity from AWS EC2 through boto3: launch, terminate, observe by tag, spot prices,
and spot interruption warnings from an SQS queue fed by an EventBridge rule.

API semantics used here, from the AWS documentation (EC2 API Reference: RunInstances,
TerminateInstances, DescribeInstances, DescribeSpotPriceHistory; EventBridge: "EC2 Spot
Instance Interruption Warning" events; boto3 guide "Retries"):
- RunInstances takes ``InstanceMarketOptions`` (MarketType ``spot``, SpotOptions MaxPrice)
  for a one-time spot instance, and ``TagSpecifications`` to tag it at launch. A refusal
  for capacity is the error ``InsufficientInstanceCapacity``.
- Retries are botocore's ``standard`` mode: throttling (RequestLimitExceeded, ...) and
  HTTP 500/502/503/504 are retried with exponential back-off and jitter, up to
  ``max_attempts`` calls; what still fails is ``Unavailable`` here, and the loop skips
  what needed it.
- An interruption warning is an EventBridge event of source ``aws.ec2``, detail-type
  ``EC2 Spot Instance Interruption Warning``, ``detail.instance-id``; the instance is
  reclaimed two minutes after it (stratus.sim.cloud.SPOT_WARNING_S).
Tested only against moto's server (moto 5), which has no spot price dynamics and no
capacity limits; docs/guides/live.md says what that leaves unchecked.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from datetime import datetime

from stratus.live.mirror import Refused, Shortage, Unavailable
from stratus.pricing.catalog import Catalog, InstanceType
from stratus.pricing.prices import ON_DEMAND, SPOT

CLUSTER_TAG = "stratus.io/cluster"
IID_TAG = "stratus.io/iid"
KEEP_TAG = "stratus.io/keep"
SHORTAGE_CODES = frozenset({"InsufficientInstanceCapacity", "InsufficientCapacity",
                            "InsufficientHostCapacity"})
THROTTLING = frozenset({"RequestLimitExceeded", "Throttling", "ThrottlingException",
                        "TooManyRequestsException", "RequestThrottled"})
LIVE_STATES = ("pending", "running")
GONE_STATES = ("shutting-down", "terminated", "stopping", "stopped")
WARNING = "EC2 Spot Instance Interruption Warning"


@dataclass(frozen=True)
class CloudInstance:
    """An EC2 instance of the virtual cluster, as DescribeInstances shows it."""

    ext_id: str
    type_name: str
    market: str
    state: str
    launched: datetime
    node_name: str
    iid: int | None  # the mirror's id it was launched as (its tag), if any
    keep: bool


def _client_error(exc) -> str:
    return exc.response.get("Error", {}).get("Code", "") if hasattr(exc, "response") else ""


class Ec2Capacity:
    """EC2 instances tagged ``stratus.io/cluster=<cluster>``. ``client_kw`` goes to
    ``boto3.client`` (region, endpoint, credentials); ``queue_url`` is the SQS queue the
    interruption rule delivers to (None: none read)."""

    def __init__(self, cluster: str, image_id: str, queue_url: str | None = None,
                 subnet_id: str | None = None, max_attempts: int = 5,
                 launch_template: str | None = None, **client_kw) -> None:
        import boto3
        from botocore.config import Config

        self.cluster = cluster
        self.image_id = image_id
        self.queue_url = queue_url
        self.subnet_id = subnet_id
        self.launch_template = launch_template
        # total_max_attempts counts the first call (botocore's max_attempts does not)
        from botocore.exceptions import BotoCoreError

        from stratus.base.errors import ConfigError

        cfg = Config(retries={"mode": "standard", "total_max_attempts": max_attempts},
                     connect_timeout=5, read_timeout=20)
        try:
            self.ec2 = boto3.client("ec2", config=cfg, **client_kw)
            self.sqs = boto3.client("sqs", config=cfg, **client_kw) if queue_url else None
        except (BotoCoreError, ValueError) as exc:  # no region, a bad endpoint URL
            raise ConfigError(f"AWS: {exc} (--region, --aws-endpoint)") from None
        self.calls: deque[tuple[str, str]] = deque(maxlen=1000)  # the last changes made
        self.changes = 0  # changes made

    def _call(self, fn, **kw):
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(**kw)
        except ClientError as exc:
            code = _client_error(exc)
            if code in SHORTAGE_CODES:
                raise Shortage(code) from None
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 500)
            # botocore retried what is transient; a 4xx left is for good (permission, a
            # bad parameter), unless it is throttling
            err = Refused if 400 <= status < 500 and code not in THROTTLING else Unavailable
            raise err(f"EC2 {fn.__name__}: {code or exc}") from None
        except BotoCoreError as exc:  # connection errors, after botocore's retries
            raise Unavailable(f"EC2 {fn.__name__}: {exc}") from None

    def tags(self, iid: int, keep: bool) -> list[dict]:
        return [{"Key": CLUSTER_TAG, "Value": self.cluster}, {"Key": IID_TAG, "Value": str(iid)},
                {"Key": KEEP_TAG, "Value": "true" if keep else "false"}]

    def launch(self, iid: int, itype: InstanceType, market: str, bid: float | None,
               keep: bool) -> CloudInstance:
        """One instance of ``itype`` in ``market`` (spot: one-time, at most ``bid`` $/h),
        tagged with the cluster and the mirror's id."""
        kw = dict(InstanceType=itype.name, MinCount=1, MaxCount=1,
                  TagSpecifications=[{"ResourceType": "instance", "Tags": self.tags(iid, keep)}])
        if self.launch_template:
            kw["LaunchTemplate"] = {"LaunchTemplateName": self.launch_template,
                                    "Version": "$Latest"}
        else:
            kw["ImageId"] = self.image_id
        if self.subnet_id:
            kw["SubnetId"] = self.subnet_id
        if market == SPOT:
            opts = {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"}
            if bid is not None:
                opts["MaxPrice"] = f"{bid:.6f}"
            kw["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": opts}
        out = self._call(self.ec2.run_instances, **kw)["Instances"][0]
        self.changes += 1
        self.calls.append(("launch", f"{out['InstanceId']} {itype.name} {market} iid={iid}"))
        return self._instance(out)

    def terminate(self, ext_ids: list[str]) -> None:
        if ext_ids:
            try:
                self._call(self.ec2.terminate_instances, InstanceIds=list(ext_ids))
            except Refused as exc:  # gone already: done
                if "InvalidInstanceID" not in str(exc):
                    raise
            self.changes += 1
            self.calls.extend(("terminate", x) for x in ext_ids)

    def _instance(self, d: dict) -> CloudInstance:
        tags = {t["Key"]: t["Value"] for t in d.get("Tags", ())}
        iid = tags.get(IID_TAG)
        return CloudInstance(
            d["InstanceId"], d["InstanceType"],
            SPOT if d.get("InstanceLifecycle") == "spot" else ON_DEMAND, d["State"]["Name"],
            d["LaunchTime"], d.get("PrivateDnsName", ""),
            int(iid) if iid is not None and iid.isdigit() else None,
            tags.get(KEEP_TAG) == "true")

    def describe(self) -> list[CloudInstance]:
        """The cluster's instances that are not terminated (an instance the loop knows
        that is missing here has gone)."""
        filters = [{"Name": f"tag:{CLUSTER_TAG}", "Values": [self.cluster]},
                   {"Name": "instance-state-name", "Values": [*LIVE_STATES, *GONE_STATES[:1],
                                                              *GONE_STATES[2:]]}]
        out: list[CloudInstance] = []
        kw: dict = {}
        while True:
            page = self._call(self.ec2.describe_instances, Filters=filters, **kw)
            out.extend(self._instance(i) for r in page["Reservations"] for i in r["Instances"])
            if not page.get("NextToken"):
                return out
            kw = {"NextToken": page["NextToken"]}

    def spot_prices(self, catalog: Catalog, zone: str | None = None) -> dict[str, float]:
        """The latest spot price of each catalog type ($/h; the lowest over zones unless
        ``zone``), from DescribeSpotPriceHistory."""
        kw = dict(InstanceTypes=[t.name for t in catalog],
                  ProductDescriptions=["Linux/UNIX", "Linux/UNIX (Amazon VPC)"])
        if zone:
            kw["AvailabilityZone"] = zone
        latest: dict[tuple[str, str], tuple[datetime, float]] = {}
        hist = self._call(self.ec2.describe_spot_price_history, **kw)
        for h in hist["SpotPriceHistory"]:
            key = (h["InstanceType"], h["AvailabilityZone"])
            if key not in latest or h["Timestamp"] > latest[key][0]:
                latest[key] = (h["Timestamp"], float(h["SpotPrice"]))
        out: dict[str, float] = {}
        for (name, _z), (_ts, p) in latest.items():
            out[name] = min(p, out.get(name, p))
        return out

    def interruptions(self) -> list[tuple[str, datetime]]:
        """Interruption warnings waiting in the queue, (instance id, time of the event);
        read messages are deleted."""
        if self.sqs is None:
            return []
        out = []
        while True:
            got = self._call(self.sqs.receive_message, QueueUrl=self.queue_url,
                             MaxNumberOfMessages=10, WaitTimeSeconds=0)
            msgs = got.get("Messages", [])
            if not msgs:
                return out
            for m in msgs:
                try:
                    ev = json.loads(m["Body"])
                    if ev.get("detail-type") == WARNING:
                        out.append((ev["detail"]["instance-id"],
                                    datetime.fromisoformat(ev["time"])))
                except (ValueError, KeyError, TypeError):
                    pass  # not an event of ours: dropped (it would block the queue)
            self._call(self.sqs.delete_message_batch, QueueUrl=self.queue_url, Entries=[
                {"Id": str(k), "ReceiptHandle": m["ReceiptHandle"]} for k, m in enumerate(msgs)])


__all__ = ["CLUSTER_TAG", "CloudInstance", "Ec2Capacity", "GONE_STATES", "IID_TAG",
           "LIVE_STATES"]
