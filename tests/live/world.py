"""A simulated world behind real local API servers: moto (EC2, SQS, EventBridge) and kmock
(Kubernetes). It plays a trace as a cluster would:

- it submits each task's pod at its submit time;
- it registers a Node for each instance the loop launched, ``spinup_s`` after it saw the
  launch, and deletes the Node of an instance that was terminated;
- it acts as the kubelet: a pod bound to a ready node runs from then on; a pod the loop
  re-created on a node with a checkpoint (a migration) runs after the transfer, from its
  checkpoint; a pod succeeds after its runtime;
- it injects spot interruptions: a warning through EventBridge to SQS, and the instance
  reclaimed two minutes later.

It follows the engine's models (spin-up, transfer time from the memory request and the
migration rate) so that the same trace gives the engine and the live loop the same
world. Times are whole seconds: Kubernetes timestamps carry them exactly.
"""

from __future__ import annotations

import copy
import heapq
import json
import math
import re
from itertools import count

from stratus.base.resources import request_units
from stratus.live.clock import moment
from stratus.live.ec2 import CLUSTER_TAG
from stratus.live.kube import (
    ANTI_AFFINITY,
    CHECKPOINT,
    ESTIMATE,
    ESTIMATE_KEY,
    INDEX_LABEL,
    INSTANCE_LABEL,
    JOB_LABEL,
    JOB_SIZE,
    TASK_KEY,
    pod_of,
)
from stratus.sim.engine import MIB_BITS
from tests.live.servers import PODS

_RESTORE = re.compile(r"-m[0-9]+$")
WAKE = frozenset({"node", "notready", "reclaim"})  # events the loop looks at when they happen


def iso(clock, t: float) -> str:
    return moment(clock, t).isoformat().replace("+00:00", "Z")


class SimWorld:
    """``trace``'s tasks as pods in ``namespace``; ``ec2``, ``events`` boto3 clients on
    moto; ``core`` a CoreV1Api on kmock. ``interrupt``: (time, launch number) pairs: the
    n-th instance launched gets an interruption warning at that time. ``calls``: a
    function giving counts of the loop's changes to the cloud and to the cluster, so
    that each is read only after the loop changed it."""

    def __init__(self, trace, ec2, events, core, clock_ref, cluster: str,
                 spinup_s: float = 45.0, migration_mbps: float = 536.870912,
                 namespace: str = "default", interrupt=(), not_ready=(), vanish=(),
                 calls=None, kmock=None) -> None:
        self.ec2, self.events, self.core = ec2, events, core
        self.kmock = kmock  # the server's handle (tests.live.servers.KmockURL), to read its store
        self.clock = clock_ref
        self.cluster = cluster
        self.ns = namespace
        self.spinup_s = spinup_s
        self._bits_per_s = migration_mbps * 1e6
        self.calls = calls
        self._seen_cloud = self._seen_kube = -1
        self._heap: list = []
        self._seq = count()
        f = trace.frame
        units = request_units(f["cpu"], f["mem_gib"])
        self.runtime: dict[str, float] = {}
        aa = f["anti_affinity"].tolist() if "anti_affinity" in f.columns else None
        sizes = f.groupby("job_id").size()
        for row in range(len(f)):
            name = f"t{row:05d}"
            self.runtime[f"{namespace}/{name}"] = float(f["runtime_s"].iat[row])
            milli, mib = (int(x) for x in units[row])
            body = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": namespace,
                                 "creationTimestamp": None,
                                 "labels": {JOB_LABEL: str(int(f["job_id"].iat[row])),
                                            INDEX_LABEL: str(int(f["task_id"].iat[row])),
                                            JOB_SIZE: str(int(sizes[f["job_id"].iat[row]]))},
                                 "annotations": {
                                     ESTIMATE: repr(float(f["runtime_s"].iat[row])),
                                     ESTIMATE_KEY: str(f["job_name"].iat[row])}},
                    "spec": {"schedulerName": "stratus", "restartPolicy": "Never",
                             "containers": [{"name": "task", "image": "busybox",
                                             "resources": {"requests": {
                                                 "cpu": f"{milli}m", "memory": f"{mib}Mi"}}}]},
                    "status": {"phase": "Pending"}}
            if aa is not None and aa[row]:
                body["metadata"]["annotations"][ANTI_AFFINITY] = "true"
            self._push(float(f["submit_s"].iat[row]), "submit", body)
        self.interrupt = sorted(interrupt, key=lambda x: x[1])
        for when in not_ready:  # then the node running the most pods goes NotReady
            self._push(when, "notready", None)
        self.not_ready_nodes: list[str] = []  # instance ids
        for when, name in vanish:  # (time, pod name): someone deletes the pod then
            self._push(when, "vanish", name)
        self.vanished: set[str] = set()
        self.dead: set[str] = set()  # nodes whose kubelet is gone (NotReady)
        self.done_keys: set[str] = set()  # tasks ended (succeeded, or their pod deleted)
        self.finish_at: dict[str, float] = {}  # task -> when its pod succeeded
        self.launches: list[str] = []  # instance ids in the order the world saw them
        self.launched: dict[str, dict] = {}  # id -> what EC2 said
        self.nodes: dict[str, str] = {}  # instance id -> node name, while registered
        self.gone: set[str] = set()
        self.running: dict[str, float] = {}  # pod name -> when it started
        self.done: set[str] = set()
        self.restoring: set[str] = set()
        self.interrupted: list[str] = []

    def _push(self, t: float, what: str, arg) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), what, arg))

    # --- reading the world -------------------------------------------------------------
    # The world is the provider and the cluster: it reads their state where they keep it
    # (moto's backend, kmock's store) rather than through the API the loop uses, which
    # costs 25-110 ms a call on moto and kmock (tests/live/README: timings).
    def _pods(self) -> list[dict]:
        if self.kmock is None:
            r = self.core.list_namespaced_pod(self.ns, _preload_content=False)
            return json.loads(r.data).get("items") or []
        emu, ns = self.kmock.emulator, self.ns

        def snapshot():  # bound pods not yet running: the kubelet's work
            return [copy.deepcopy(dict(o)) for k, o in emu.objects.items()
                    if k[0] == PODS and k[1] == ns and not o.deleted
                    and (o.get("spec") or {}).get("nodeName")
                    and (o.get("status") or {}).get("phase", "Pending") == "Pending"]

        return self.kmock.call(snapshot)

    def _instances(self) -> list[dict]:
        """The cluster's instances that are pending or running, as DescribeInstances."""
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.ec2.models import ec2_backends

        b = ec2_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
        out = []
        for i in b.all_instances():
            if b.tags.get(i.id, {}).get(CLUSTER_TAG) != self.cluster:
                continue
            if i._state.name in ("pending", "running"):
                out.append({"InstanceId": i.id, "InstanceType": i.instance_type,
                            "PrivateDnsName": i.private_dns_name,
                            "InstanceLifecycle": i.lifecycle})
        return out

    # --- the clock's protocol ----------------------------------------------------------
    def settle(self, t: float) -> None:
        """React now to what the loop did: launches, terminations, bindings, deletions."""
        cloud_calls, kube_calls = self.calls() if self.calls is not None else (-1, -1)
        if cloud_calls != self._seen_cloud or cloud_calls < 0:
            self._seen_cloud = cloud_calls
            self._settle_cloud(t)
        if kube_calls != self._seen_kube or kube_calls < 0:
            self._seen_kube = kube_calls
            self._kubelet(t)

    def _settle_cloud(self, t: float) -> None:
        live = set()
        for i in self._instances():
            ext = i["InstanceId"]
            live.add(ext)
            if ext not in self.launched:
                self.launched[ext] = i
                self.launches.append(ext)
                self._push(t + self.spinup_s, "node", ext)
                k = len(self.launches)
                for when, nth in self.interrupt:
                    if nth == k:
                        self._push(max(when, t), "warn", ext)
        for ext in self.launched.keys() - live - self.gone:  # terminated by the loop
            self._reclaimed(ext)

    def next_event(self, t: float) -> float:
        """The next time the loop must look: a node comes up (tasks whose migration
        waited for it move then), goes NotReady, or is reclaimed. Other changes (a pod
        submitted, started, finished) carry their times in the objects, and the loop
        reads them at its next look, as a loop that polls does."""
        return min((e[0] for e in self._heap if e[2] in WAKE), default=math.inf)

    def fire(self, t: float) -> None:
        """Everything that happens up to ``t``, in order, each at its own time."""
        while self._heap and self._heap[0][0] <= t:
            te, _, what, arg = heapq.heappop(self._heap)
            getattr(self, f"_on_{what}")(arg, te)

    # --- what happens ------------------------------------------------------------------
    def _on_submit(self, body: dict, t: float) -> None:
        body["metadata"]["creationTimestamp"] = iso(self.clock, t)
        self.core.create_namespaced_pod(self.ns, body, _preload_content=False)

    def _on_node(self, ext: str, t: float) -> None:
        if ext in self.gone:
            return
        i = self.launched[ext]
        name = i["PrivateDnsName"]
        self.core.create_node({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                INSTANCE_LABEL: ext, "node.kubernetes.io/instance-type": i["InstanceType"],
                "karpenter.sh/capacity-type":
                    "spot" if i.get("InstanceLifecycle") == "spot" else "on-demand"}},
            "spec": {"providerID": f"aws:///us-east-1a/{ext}"},
            "status": {"conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": iso(self.clock, t)}]}},
            _preload_content=False)
        self.nodes[ext] = name
        self._kubelet(t)

    def _status(self, name: str, status: dict) -> None:
        """The kubelet's status update (into kmock's store, as the world reads it)."""
        if self.kmock is None:
            self.core.patch_namespaced_pod_status(name, self.ns, {"status": status},
                                                  _preload_content=False)
            return
        emu, ns = self.kmock.emulator, self.ns
        self.kmock.call(lambda: emu.objects[PODS, ns, name].patch({"status": status}))

    def _kubelet(self, t: float) -> None:
        """Bound pods on ready nodes start (restores after their transfer)."""
        ready = set(self.nodes.values())
        for d in self._pods():
            p = pod_of(d)
            if p.name in self.running or p.name in self.done or p.name in self.restoring:
                continue
            if p.phase != "Pending" or p.node not in ready:
                continue
            if _RESTORE.search(p.name) and CHECKPOINT in p.annotations:
                mib = p.requests.get("memory", 0.0) / 2**20
                self.restoring.add(p.name)
                self._push(t + mib * MIB_BITS / self._bits_per_s, "restore", p)
            else:
                self._start(p, t)

    def _start(self, p, t: float) -> None:
        if p.node in self.dead:
            return
        self._status(p.name, {"phase": "Running", "startTime": iso(self.clock, t)})
        self.running[p.name] = t
        key = p.annotations.get(TASK_KEY) or f"{self.ns}/{p.name}"
        self._push(t + self.runtime[key] - float(p.annotations.get(CHECKPOINT, 0.0)),
                   "finish", (p.name, t, key, p.node))

    def _exists(self, name: str) -> bool:
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.read_namespaced_pod(name, self.ns, _preload_content=False)
            return True
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise

    def _on_restore(self, p, t: float) -> None:
        self.restoring.discard(p.name)
        if self._exists(p.name):
            self._start(p, t)

    def _on_finish(self, arg, t: float) -> None:
        name, started, key, node = arg
        if self.running.get(name) != started or node in self.dead or not self._exists(name):
            return  # deleted (moved or sent back) before it ended, or its node is dead
        del self.running[name]
        self.done.add(name)
        self.done_keys.add(key)
        self.finish_at[key] = t
        at = iso(self.clock, t)
        self._status(name, {"phase": "Succeeded", "containerStatuses": [
            {"name": "task", "state": {"terminated": {"exitCode": 0, "finishedAt": at}}}]})

    def _on_warn(self, ext: str, t: float) -> None:
        if ext in self.gone:
            return
        self.events.put_events(Entries=[{
            "Source": "aws.ec2", "DetailType": "EC2 Spot Instance Interruption Warning",
            "Detail": json.dumps({"instance-id": ext, "instance-action": "terminate"}),
            "Resources": [f"arn:aws:ec2:us-east-1:123456789012:instance/{ext}"],
            "Time": moment(self.clock, t)}])
        self.interrupted.append(ext)
        self._push(t + 120.0, "reclaim", ext)

    def _on_reclaim(self, ext: str, t: float) -> None:
        if ext not in self.gone:
            self.ec2.terminate_instances(InstanceIds=[ext])
            self._reclaimed(ext)

    def _reclaimed(self, ext: str) -> None:
        self.gone.add(ext)
        name = self.nodes.pop(ext, None)
        if name is not None:
            self.core.delete_node(name, _preload_content=False)

    def _on_notready(self, _arg, t: float) -> None:
        on: dict[str, int] = {}
        for p in self._all_pods():
            if p.phase == "Running" and p.node in self.nodes.values():
                on[p.node] = on.get(p.node, 0) + 1
        if not on:
            return
        name = max(on, key=lambda n: (on[n], n))
        self.dead.add(name)
        self.not_ready_nodes.append(next(e for e, n in self.nodes.items() if n == name))
        self.core.patch_node_status(name, {"status": {"conditions": [
            {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
             "lastTransitionTime": iso(self.clock, t)}]}}, _preload_content=False)

    def _all_pods(self) -> list:
        ns = self.ns
        return [pod_of(d) for d in self.kmock.call(
            lambda: [copy.deepcopy(dict(o)) for k, o in self.kmock.emulator.objects.items()
                     if k[0] == PODS and k[1] == ns and not o.deleted])]

    def _on_vanish(self, name: str, t: float) -> None:
        """Someone deletes the pod that is task ``name`` now (its first pod or one the
        loop made for it)."""
        key = f"{self.ns}/{name}"
        for p in self._all_pods():
            if p.key == key and p.phase in ("Pending", "Running"):
                self.core.delete_namespaced_pod(p.name, self.ns, _preload_content=False)
                self.running.pop(p.name, None)
                self.vanished.add(name)
                self.done_keys.add(key)

    def finished(self) -> bool:
        return len(self.done_keys) == len(self.runtime) and not self._heap_has("submit")

    def _heap_has(self, what: str) -> bool:
        return any(e[2] == what for e in self._heap)
