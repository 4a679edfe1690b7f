"""``stratus live``: a scheduler against a real cluster and cloud, from a LiveSpec
(stratus.live; docs/guides/live.md)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from stratus.app.spec.live import LiveSpec
from stratus.base.errors import ConfigError


def _need_extra():
    try:
        import boto3  # noqa: F401
        import kubernetes  # noqa: F401
        import tenacity  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"stratus live needs the extra 'live' ({exc.name} is missing): "
                          f"pip install 'stratus-vc[live]'") from None


def kube_client(spec: LiveSpec):
    """An ApiClient for --kube-url, else the kubeconfig, else the in-cluster account."""
    from kubernetes import client, config

    if spec.kube_url:
        c = client.Configuration()
        c.host = spec.kube_url
        return client.ApiClient(c)
    try:
        return config.new_client_from_config(config_file=spec.kubeconfig, context=spec.context)
    except (config.ConfigException, OSError) as exc:
        if spec.kubeconfig or spec.context:
            raise ConfigError(f"--kubeconfig: {exc}") from None
    try:
        config.load_incluster_config()
    except config.ConfigException as exc:
        raise ConfigError(f"no Kubernetes API to talk to: give --kube-url or --kubeconfig "
                          f"({exc})") from None
    return client.ApiClient()


def _constant_spot(catalog, prices: dict[str, float], src: str):
    from stratus.pricing.prices import SPOT, PriceBook, PriceSeries

    missing = [t.name for t in catalog if t.name not in prices]
    if missing:
        raise ConfigError(f"{src} has no spot price for {', '.join(missing)}")
    return PriceBook.on_demand(catalog).with_series(
        {(t.name, SPOT): PriceSeries.constant(prices[t.name]) for t in catalog}, name=src)


def replay_config(spec: LiveSpec, capacity=None):
    """The engine configuration the live loop decides with: the catalog, the market and
    its prices (spot: the latest of --spot-prices, else EC2's price history now, held for
    the run), the tick and the scheduler's cost model."""
    from stratus.live.mirror import AnnotationEstimator
    from stratus.policy.history import HistoryEstimator
    from stratus.pricing.catalog_files import get_catalog
    from stratus.pricing.prices import ON_DEMAND, SPOT
    from stratus.sim.engine import ReplayConfig
    from stratus.sim.markets import configure_market

    lo, hi = (float(x) for x in spec.spinup.split(","))
    cfg = ReplayConfig(tick_s=spec.tick, spinup_s=(lo, hi), migration_mbps=spec.migration_mbps,
                       migration_footprint=spec.migration_footprint,
                       catalog=get_catalog(spec.catalog),
                       estimator=(AnnotationEstimator(spec.estimate_default)
                                  if spec.estimator == "annotation" else HistoryEstimator()))
    if spec.market == ON_DEMAND:
        configure_market(cfg, ON_DEMAND)
    elif spec.spot_prices:
        configure_market(cfg, SPOT, spec.spot_prices)
        last = {t.name: float(cfg.prices.series(t.name, SPOT).prices[-1]) for t in cfg.catalog}
        cfg.prices = _constant_spot(cfg.catalog, last, spec.spot_prices)
    else:
        if capacity is None:
            raise ConfigError("live --shadow on spot needs --spot-prices FILE (or AWS access: "
                              "--region, to read EC2's spot price history)")
        from stratus.live.mirror import Unavailable

        try:
            now = capacity.spot_prices(cfg.catalog)
        except Unavailable as exc:
            raise ConfigError(f"could not read EC2's spot prices: {exc}") from None
        cfg.prices = _constant_spot(cfg.catalog, now, "EC2 DescribeSpotPriceHistory")
    return cfg


def _clock(spec: LiveSpec):
    """Wall time whose ticks fall on whole ticks from a second from now: the first tick is
    then, not up to a tick later."""
    from stratus.live.clock import WallClock

    return WallClock(poll_s=spec.poll, epoch=datetime.now(UTC) + timedelta(seconds=1))


def _preflight(work, capacity) -> None:
    """One read of each API before the loop starts: a wrong address, missing credentials
    or permissions are one error now (exit 2), not a loop that skips every tick."""
    from stratus.live.mirror import Unavailable

    try:
        work.observe()
    except Unavailable as exc:
        raise ConfigError(f"live: cannot read the cluster: {exc}") from None
    if capacity is not None:
        try:
            capacity.describe()
        except Unavailable as exc:
            raise ConfigError(f"live: cannot read EC2: {exc}") from None


def run_live(spec: LiveSpec, clock=None, stop=None) -> dict:
    """Run the loop as ``spec`` says; the document ``stratus live --json`` prints.
    ``clock``: a stratus.live.clock clock (default: wall time, polling every --poll s);
    ``stop()``: asked after each tick."""
    _need_extra()
    from stratus.app.registry import make_scheduler
    from stratus.live.ec2 import Ec2Capacity
    from stratus.live.kube import KubeWork
    from stratus.live.loop import LiveLoop

    aws = {k: v for k, v in (("region_name", spec.region),
                             ("endpoint_url", spec.aws_endpoint)) if v}
    capacity = None
    if spec.apply or spec.region or spec.aws_endpoint:
        capacity = Ec2Capacity(spec.cluster, spec.image_id or "", queue_url=spec.queue_url,
                               subnet_id=spec.subnet, max_attempts=spec.api_attempts,
                               launch_template=spec.launch_template, **aws)
    cfg = replay_config(spec, capacity)
    work = KubeWork(kube_client(spec), namespace=spec.namespace,
                    scheduler=None if spec.shadow else spec.pod_scheduler,
                    attempts=spec.api_attempts)
    _preflight(work, capacity if spec.apply else None)
    loop = LiveLoop(make_scheduler(spec.scheduler), cfg, work,
                    capacity if spec.apply else None, clock or _clock(spec),
                    shadow=spec.shadow, ice_window_s=spec.ice_window,
                    boot_timeout_s=spec.boot_timeout)
    ticks = spec.ticks or (1 if spec.shadow else None)
    interrupted = False
    try:
        loop.run(ticks=ticks, stop=stop or (lambda: False))
    except KeyboardInterrupt:  # a live loop ends when told to: its account so far
        interrupted = True
    if loop.stats.ticks == 0 and loop.stats.skipped_ticks:  # it went away after the start
        raise ConfigError(f"live: no tick could observe the cluster; the last error: "
                          f"{loop.stats.errors[-1]}")
    return live_doc(spec, loop, interrupted)


def live_doc(spec: LiveSpec, loop, interrupted: bool = False) -> dict:
    from stratus.live.clock import moment

    m = loop.mirror
    doc = {"command": "live", "mode": "shadow" if spec.shadow else "apply",
           "scheduler": spec.scheduler, "cluster": spec.cluster, "tick_s": spec.tick,
           "interrupted": interrupted, "stats": dataclasses.asdict(loop.stats),
           "decisions": [{"at": moment(loop.clock, e["t"]).isoformat(), **e}
                         for e in loop.decisions]}
    if spec.shadow:
        e = loop.estimate
        doc["estimate"] = {
            "ticks": e.ticks, "actual_usd": round(e.actual_usd, 6),
            "policy_usd": round(e.policy_usd, 6),
            "estimated_saving_usd": round(e.saving_usd, 6),
            "how": ("per tick, the $/h of the nodes as observed minus the $/h after the "
                    "scheduler's decisions on them, times the tick; each tick decides "
                    "afresh on the cluster as it is")}
    else:
        doc["cluster_state"] = {"instances": len(m.cloud.alive), "pending": len(m.book.pending),
                                "tasks_done": m.book.n_done, "vanished": m.vanished,
                                "revocations": m.cloud.revocations, "crashes": m.cloud.crashes,
                                "ice_failures": m.cloud.ice_failures}
    return doc


__all__ = ["kube_client", "live_doc", "replay_config", "run_live"]
