"""The live driver's parts that need no server: quantities, pods and nodes as read, the
spec's checks, the engine's configuration from a spec."""

from __future__ import annotations

import pytest

from stratus.base.errors import ConfigError


@pytest.mark.parametrize("q,want", [("500m", 0.5), ("2", 2.0), ("0.25", 0.25), ("1Gi", 2**30),
                                    ("1024Mi", 2**30), ("1G", 1e9), ("1e3", 1000.0), (3, 3.0)])
def test_quantities(q, want):
    from stratus.live.kube import quantity

    assert quantity(q) == want


@pytest.mark.parametrize("bad", ["", "1Qi", "m", "1.2.3"])
def test_bad_quantities_are_named(bad):
    from stratus.live.kube import quantity

    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        quantity(bad)


def test_a_pod_as_read():
    from stratus.live.kube import pod_of

    p = pod_of({"metadata": {"name": "a", "namespace": "n", "annotations": {
        "stratus.io/task": "n/orig"}, "creationTimestamp": "2026-01-01T00:00:10Z"},
        "spec": {"nodeName": "x", "schedulerName": "stratus", "containers": [
            {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
            {"resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Succeeded", "containerStatuses": [
            {"state": {"terminated": {"finishedAt": "2026-01-01T00:01:00Z"}}},
            {"state": {"terminated": {"finishedAt": "2026-01-01T00:02:00Z"}}}]}})
    assert p.key == "n/orig" and p.node == "x" and p.scheduler == "stratus"
    assert p.requests == {"cpu": 1.5, "memory": 2**30}
    assert p.finished.minute == 2 and p.created.second == 10


def test_a_node_as_read():
    from stratus.live.kube import node_of

    n = node_of({"metadata": {"name": "ip-1"}, "spec": {"providerID": "aws:///us-east-1a/i-0ab"},
                 "status": {"conditions": [{"type": "Ready", "status": "Unknown",
                                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    assert n.ext_id == "i-0ab" and not n.ready
    m = node_of({"metadata": {"name": "k", "labels": {"stratus.io/instance-id": "i-9"}},
                 "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert m.ext_id == "i-9" and m.ready


@pytest.mark.parametrize("values,msg", [
    ({}, "exactly one of --shadow"),
    ({"shadow": True, "apply": True}, "exactly one of --shadow"),
    ({"apply": True}, "--image-id or --launch-template"),
    ({"shadow": True, "market": "on-demand", "spot_prices": "x.json"}, "--spot-prices given"),
    ({"shadow": True, "kube_url": "http://x", "context": "c"}, "--kube-url and --kubeconfig"),
    ({"shadow": True, "tick": 0}, "--tick"),
    ({"shadow": True, "kube_url": "x"}, "--kube-url takes an http"),
    ({"apply": True, "image_id": "a", "aws_endpoint": "localhost:5"}, "--aws-endpoint takes"),
    ({"shadow": True, "scheduler": "nope"}, "nope"),
])
def test_the_spec_refuses_with_one_line(values, msg):
    from stratus.app.spec import LiveSpec, cli_label

    with pytest.raises(ConfigError, match=msg):
        LiveSpec.build(values, cli_label)


def test_the_cli_exits_2_on_a_bad_option(capsys):
    from stratus.app.cli import main

    assert main(["live", "--apply", "--json"]) == 2
    err = capsys.readouterr().err
    assert "--image-id" in err and "Traceback" not in err


def test_shadow_on_spot_needs_prices():
    from stratus.app.live import replay_config
    from stratus.app.spec import LiveSpec

    with pytest.raises(ConfigError, match="--spot-prices"):
        replay_config(LiveSpec(shadow=True))
    cfg = replay_config(LiveSpec(shadow=True, market="on-demand", catalog="m5"))
    assert cfg.market == "on-demand" and cfg.catalog.name.startswith("m5")


def test_the_annotation_estimator():
    from stratus.live.mirror import AnnotationEstimator
    from stratus.sim.model import Task

    est = AnnotationEstimator(100.0)
    tasks = [Task(0, 1, 0, 0.0, float("nan"), (1, 1), user_estimate=30.0),
             Task(1, 1, 1, 0.0, float("nan"), (1, 1))]
    assert est.predict(tasks) == [30.0, 100.0]
    with pytest.raises(ConfigError):
        AnnotationEstimator(0.0)
