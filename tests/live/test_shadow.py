"""``stratus live --shadow`` against kmock with a cluster already running: one JSON
document with the decisions and the estimated saving, and nothing changed."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


def preload(core, ns: str) -> None:
    """Four m4.2xlarge nodes (on-demand): one busy, two nearly empty, one idle; twelve
    pending pods."""
    def node(name, itype="m4.2xlarge"):
        core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {"node.kubernetes.io/instance-type": itype,
                                     "karpenter.sh/capacity-type": "on-demand"}},
            "status": {"conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2026-11-25T09:00:00Z"}]}})

    def pod(name, cpu, mem, node_name=None, started=None, est=1800.0):
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": ns, "creationTimestamp": "2026-11-25T09:30:00Z",
            "labels": {"stratus.io/job": name.split("-")[0]},
            "annotations": {"stratus.io/estimate-s": str(est)}},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {
                "requests": {"cpu": cpu, "memory": mem}}}]},
            "status": {"phase": "Pending"}}
        if node_name:
            body["spec"]["nodeName"] = node_name
            body["status"] = {"phase": "Running", "startTime": started}
        core.create_namespaced_pod(ns, body)

    for n in ("busy", "low-1", "low-2", "idle"):
        node(f"ip-{n}.ec2.internal")
    for k in range(6):
        pod(f"a-{k}", "1", "4Gi", "ip-busy.ec2.internal", "2026-11-25T09:40:00Z")
    pod("b-0", "500m", "1Gi", "ip-low-1.ec2.internal", "2026-11-25T09:50:00Z", est=7200.0)
    pod("c-0", "250m", "512Mi", "ip-low-2.ec2.internal", "2026-11-25T09:55:00Z", est=600.0)
    for k in range(12):
        pod(f"d-{k}", "1", "2Gi")


def snapshot(core, ns: str) -> list:
    return sorted((p.metadata.name, p.spec.node_name, p.status.phase)
                  for p in core.list_namespaced_pod(ns).items)


def test_shadow_prints_decisions_and_saving_and_changes_nothing(kmock_url, capsys):
    from stratus.app.cli import main
    from tests.live.servers import make_api

    core = make_api(kmock_url)
    ns = "shadow"
    preload(core, ns)
    before, nodes_before = snapshot(core, ns), len(core.list_node().items)
    code = main(["live", "--shadow", "--kube-url", kmock_url, "--namespace", ns,
                 "--market", "on-demand", "--tick", "1", "--ticks", "2", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(out)  # exactly one document
    assert doc["mode"] == "shadow" and doc["stats"]["ticks"] == 2
    assert len(doc["decisions"]) == 2
    first = doc["decisions"][0]
    # the idle node would be released at once; the pending pods placed (on the nodes with
    # room, or on new instances)
    assert first["nodes"][str(first["idle_released"][0])] == "ip-idle.ec2.internal"
    placed = {first["pods"][str(tid)] for tid, _ in first["place"]}
    for a in first["acquire"]:
        placed.update(first["pods"][str(tid)] for tid in a[2])
    assert placed == {f"{ns}/d-{k}" for k in range(12)}
    est = doc["estimate"]
    assert est["ticks"] == 2
    # four m4.2xlarge on demand for two 1-s ticks, against fewer after the decisions
    assert est["actual_usd"] == pytest.approx(2 * 4 * 0.4 / 3600, rel=1e-3)
    assert est["estimated_saving_usd"] == pytest.approx(est["actual_usd"] - est["policy_usd"])
    assert est["estimated_saving_usd"] > 0
    # shadow changed nothing
    assert snapshot(core, ns) == before and len(core.list_node().items) == nodes_before


def test_shadow_from_python(kmock_url):
    import stratus
    from stratus.live.clock import ManualClock
    from tests.live.servers import make_api

    preload(make_api(kmock_url), "py")
    doc = stratus.run_live(shadow=True, kube_url=kmock_url, namespace="py", market="on-demand",
                           ticks=3, clock=ManualClock())
    assert doc["stats"]["ticks"] == 3 and len(doc["decisions"]) == 3
    assert doc["decisions"][0]["at"] == "2026-01-01T00:00:00+00:00"
    # the same cluster, the same decisions each tick (each tick decides afresh)
    strip = [{k: v for k, v in e.items() if k not in ("t", "at")} for e in doc["decisions"]]
    assert strip[0] == strip[1] == strip[2]
