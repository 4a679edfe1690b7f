"""The spec of ``stratus live``: a scheduler against a real cluster and cloud (stratus.live;
docs/guides/live.md is the runbook)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from stratus.app.spec.fields import (
    Spec,
    _catalog,
    _footprint,
    _market,
    _path,
    _scheduler,
    _spinup,
    flag,
    number,
    opt,
    seconds,
    text,
    tick_seconds,
)
from stratus.base.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class LiveSpec(Spec):
    command: ClassVar[str] = "live"
    scheduler: str = opt("stratus", _scheduler, help="see `stratus schedulers`")
    shadow: bool = opt(False, flag, cli="flag",
                       help="observe only: log what the scheduler would do and the estimated "
                            "saving; change nothing")
    apply: bool = opt(False, flag, cli="flag",
                      help="act: launch and terminate instances, bind and move pods")
    # --- Kubernetes ---------------------------------------------------------------------
    kube_url: str | None = opt(None, text(optional=True), metavar="URL",
                               help="API server URL (default: --kubeconfig, else the "
                                    "in-cluster service account)")
    kubeconfig: str | None = opt(None, _path, metavar="FILE",
                                 help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    context: str | None = opt(None, text(optional=True), help="kubeconfig context")
    namespace: str | None = opt(None, text(optional=True),
                                help="namespace of the tasks' pods (default: every namespace)")
    pod_scheduler: str = opt("stratus", text(what="a schedulerName"), metavar="NAME",
                             help="--apply takes the pending pods whose spec.schedulerName is "
                                  "this; --shadow takes every pod of --namespace")
    # --- AWS --------------------------------------------------------------------------------
    cluster: str = opt("stratus", text(what="a tag value"),
                       help="the virtual cluster's name: its instances carry the tag "
                            "stratus.io/cluster=NAME")
    region: str | None = opt(None, text(optional=True), help="AWS region (default: the "
                                                             "environment's)")
    aws_endpoint: str | None = opt(None, text(optional=True), metavar="URL",
                                   help="AWS endpoint URL (local test servers)")
    image_id: str | None = opt(None, text(optional=True), metavar="AMI",
                               help="image the instances boot (or --launch-template)")
    launch_template: str | None = opt(None, text(optional=True), metavar="NAME",
                                      help="launch template the instances boot from (its "
                                           "user data joins them to the cluster)")
    subnet: str | None = opt(None, text(optional=True), help="subnet id for launches")
    queue_url: str | None = opt(None, text(optional=True), metavar="URL",
                                help="SQS queue of EC2 spot interruption warnings "
                                     "(EventBridge rule; docs/guides/live.md)")
    api_attempts: int = opt(5, number("an integer", 1, integer=True), metavar="N",
                            help="calls per API request before giving up (retries with "
                                 "back-off)")
    # --- the cloud model the scheduler decides with --------------------------------------
    catalog: str = opt("m4", _catalog, metavar="NAME|FILE",
                       help="instance types the scheduler may choose (`stratus catalogs`)")
    market: str = opt("spot", _market, help="market for acquisitions: spot or on-demand")
    spot_prices: str | None = opt(None, _path, metavar="FILE",
                                  help="spot prices from an AWS price history file (default: "
                                       "EC2's DescribeSpotPriceHistory at the start)")
    tick: float = opt(60.0, tick_seconds(),
                      help="scheduling interval in seconds")
    spinup: str = opt("30,160", _spinup, help="spin-up range LO,HI seconds the scheduler "
                                              "assumes")
    migration_mbps: float = opt(160.0, number("a rate in Mbit/s", 0, above=True),
                                help="migration rate the scheduler assumes, Mbit/s")
    migration_footprint: str = opt("request", _footprint, metavar="request|usage:F",
                                   help="memory a migration moves")
    estimator: str = opt("annotation", text(("annotation", "history")),
                         help="runtime estimates: annotation (stratus.io/estimate-s, else "
                              "--estimate-default) or history (learned from the tasks that "
                              "ended, grouped by stratus.io/estimate-key and namespace)")
    estimate_default: float = opt(3600.0, seconds(0, above=True),
                                  metavar="S", help="runtime estimate of a pod without the "
                                                    "annotation stratus.io/estimate-s")
    # --- the loop ----------------------------------------------------------------------------
    ticks: int | None = opt(None, number("an integer", 1, integer=True, optional=True),
                            metavar="N", help="stop after N ticks (default: --shadow 1, "
                                              "--apply until interrupted)")
    poll: float = opt(5.0, seconds(0, above=True, hi=3600.0),
                      help="seconds between looks at the cluster between ticks")
    boot_timeout: float = opt(900.0, seconds(0, above=True, hi=86400.0),
                              help="an instance not up as a node after this is given up")
    ice_window: float = opt(300.0, seconds(hi=86400.0),
                            help="a type refused for capacity is not asked for again for "
                                 "this long")

    def check(self) -> None:
        super().check()
        if self.shadow == self.apply:
            raise ConfigError("live: give exactly one of --shadow (observe only) and --apply")
        if self.apply and not (self.image_id or self.launch_template):
            raise ConfigError("live --apply needs --image-id or --launch-template (what the "
                              "instances boot)")
        if self.market == "on-demand" and self.spot_prices:
            raise ConfigError("--spot-prices given with --market on-demand")
        if self.kube_url and (self.kubeconfig or self.context):
            raise ConfigError("--kube-url and --kubeconfig/--context: give one")
        for name in ("kube_url", "aws_endpoint", "queue_url"):
            v = getattr(self, name)
            if v is not None and not v.startswith(("http://", "https://")):
                raise ConfigError(f"--{name.replace('_', '-')} takes an http:// or https:// "
                                  f"URL, got {v!r}")
