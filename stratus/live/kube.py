"""Work from Kubernetes through the official ``kubernetes`` client: pending pods are tasks,
nodes are instances, a placement is a Binding.

- A task is a pod whose ``spec.schedulerName`` is the loop's (default ``stratus``, so the
  default scheduler leaves it alone). Its resource vector is the sum of its containers'
  ``resources.requests`` (cpu, memory; ``nvidia.com/gpu`` with a GPU catalog). The labels
  ``stratus.io/job`` and ``stratus.io/task-index`` name its job (else the pod name up to its
  last "-"), ``stratus.io/job-size`` the job's number of tasks; the annotation
  ``stratus.io/estimate-s`` is the runtime estimate and ``stratus.io/estimate-key`` the key
  a history estimator groups runtimes by (else the job label).
- A node is an instance when it carries the label ``stratus.io/instance-id`` or an AWS
  ``spec.providerID`` (``aws:///<zone>/<instance id>``); it is up when its ``Ready``
  condition is True, down when it turns False or Unknown.
- A migration deletes the pod and re-creates it bound to the destination with the
  annotation ``stratus.io/checkpoint-s`` (the seconds of progress to restore). That is a
  stand-in for CRIU checkpoint/restore: something on the node must restore from it; the
  loop only carries the number.
- Retries: ``tenacity`` retries 429, 5xx and connection errors with exponential back-off
  and jitter; what still fails is ``Unavailable`` (the loop skips what needed it).
Tested only against kmock (docs/guides/live.md).
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime

from stratus.live.mirror import Refused, Unavailable

SCHEDULER = "stratus"
JOB_LABEL = "stratus.io/job"
INDEX_LABEL = "stratus.io/task-index"
JOB_SIZE = "stratus.io/job-size"  # the job's number of tasks
INSTANCE_LABEL = "stratus.io/instance-id"
TASK_KEY = "stratus.io/task"  # the task a re-created pod carries on
ESTIMATE = "stratus.io/estimate-s"
ESTIMATE_KEY = "stratus.io/estimate-key"
CHECKPOINT = "stratus.io/checkpoint-s"
ANTI_AFFINITY = "stratus.io/anti-affinity"
_PROVIDER = re.compile(r"^aws:///[^/]*/(i-[0-9a-z]+)$")
_QTY = re.compile(r"^([0-9.]+(?:[eE][-+]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIX = {"": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "P": 1e15, "E": 1e18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
           "Pi": 2**50, "Ei": 2**60}


def quantity(q: str | int | float) -> float:
    """A Kubernetes quantity ("500m", "2", "1Gi", "1e3") as a number."""
    if isinstance(q, int | float):
        return float(q)
    m = _QTY.match(str(q).strip())
    try:
        if m is None or m.group(2) not in _SUFFIX:
            raise ValueError
        return float(m.group(1)) * _SUFFIX[m.group(2)]
    except ValueError:
        raise ValueError(f"not a Kubernetes quantity: {q!r}") from None


def parse_time(s: str | None) -> datetime | None:
    return None if not s else datetime.fromisoformat(s.replace("Z", "+00:00"))


@dataclass
class Pod:
    """What the loop reads of a pod."""

    namespace: str
    name: str
    key: str  # the task it is: its ``stratus.io/task`` annotation, else namespace/name
    phase: str
    node: str
    created: datetime | None
    started: datetime | None
    finished: datetime | None
    labels: dict = field(repr=False)
    annotations: dict = field(repr=False)
    requests: dict[str, float] = field(repr=False)
    scheduler: str = SCHEDULER
    raw: dict = field(default_factory=dict, repr=False)


@dataclass
class Node:
    name: str
    ext_id: str | None
    ready: bool
    since: datetime | None  # when the Ready condition last changed
    labels: dict = field(repr=False)


def pod_of(d: dict) -> Pod:
    md, spec, st = d.get("metadata", {}), d.get("spec", {}), d.get("status", {}) or {}
    ann = md.get("annotations") or {}
    req: dict[str, float] = {}
    for c in spec.get("containers", ()):
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            req[k] = req.get(k, 0.0) + quantity(v)
    ends = [parse_time((cs.get("state") or {}).get("terminated", {}).get("finishedAt"))
            for cs in st.get("containerStatuses") or ()]
    ends = [e for e in ends if e is not None]
    ns, name = md.get("namespace", ""), md.get("name", "")
    return Pod(ns, name, ann.get(TASK_KEY) or f"{ns}/{name}", st.get("phase", "Pending"),
               spec.get("nodeName") or "", parse_time(md.get("creationTimestamp")),
               parse_time(st.get("startTime")), max(ends) if ends else None,
               md.get("labels") or {}, ann, req, spec.get("schedulerName") or "default-scheduler",
               d)


def node_of(d: dict) -> Node:
    md, spec, st = d.get("metadata", {}), d.get("spec", {}), d.get("status", {}) or {}
    labels = md.get("labels") or {}
    ext = labels.get(INSTANCE_LABEL)
    if ext is None:
        m = _PROVIDER.match(spec.get("providerID") or "")
        ext = m.group(1) if m else None
    ready, since = False, None
    for c in st.get("conditions") or ():
        if c.get("type") == "Ready":
            ready = c.get("status") == "True"
            since = parse_time(c.get("lastTransitionTime"))
    return Node(md.get("name", ""), ext, ready, since, labels)


class KubeWork:
    """Pods and nodes of one cluster. ``api_client`` is a ``kubernetes.client.ApiClient``;
    ``namespace`` None reads every namespace. ``attempts`` and ``wait_s`` bound the
    retries of each call."""

    def __init__(self, api_client, namespace: str | None = None, scheduler: str = SCHEDULER,
                 attempts: int = 5, wait_s: tuple[float, float] = (0.2, 5.0)) -> None:
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)
        self.namespace = namespace
        self.scheduler = scheduler
        self.calls: deque[tuple[str, str]] = deque(maxlen=1000)  # the last changes made
        self.changes = 0  # changes made
        self.unreadable: dict[str, str] = {}  # pods that could not be read, and why
        self._retrying = self._retrier(attempts, wait_s)

    @staticmethod
    def _retrier(attempts: int, wait_s: tuple[float, float]):
        import tenacity
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        def transient(exc: BaseException) -> bool:
            if isinstance(exc, ApiException):
                return exc.status == 429 or exc.status >= 500 or exc.status == 0
            return isinstance(exc, HTTPError | ConnectionError)

        return tenacity.Retrying(
            retry=tenacity.retry_if_exception(transient),
            stop=tenacity.stop_after_attempt(attempts),
            wait=tenacity.wait_exponential_jitter(multiplier=wait_s[0], max=wait_s[1]),
            reraise=True)

    def _call(self, what: str, fn, *args, ok: tuple[int, ...] = (), **kw):
        """``fn(*args, **kw)`` with retries; an error status in ``ok`` counts as done
        (a delete of a pod that is gone, a create of one that exists)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return self._retrying(fn, *args, **kw)
        except ApiException as exc:
            if exc.status in ok:
                return None
            err = Refused if 400 <= exc.status < 500 and exc.status != 429 else Unavailable
            raise err(f"Kubernetes {what}: HTTP {exc.status} {exc.reason}") from None
        except (HTTPError, ConnectionError) as exc:
            raise Unavailable(f"Kubernetes {what}: {exc}") from None

    def _list(self, what: str, fn, *args) -> list[dict]:
        # raw JSON: the client's model classes cost ~1 ms a pod to build
        resp = self._call(what, fn, *args, _preload_content=False)
        return json.loads(resp.data).get("items") or []

    def observe(self) -> tuple[list[Pod], list[Node]]:
        core = self.core
        if self.namespace is None:
            pods = self._list("list pods", core.list_pod_for_all_namespaces)
        else:
            pods = self._list("list pods", core.list_namespaced_pod, self.namespace)
        nodes = self._list("list nodes", core.list_node)
        out = []
        for p in pods:
            try:
                out.append(pod_of(p))
            except (ValueError, TypeError, AttributeError) as exc:  # left alone, said once
                md = p.get("metadata") or {} if isinstance(p, dict) else {}
                self.unreadable[f"{md.get('namespace')}/{md.get('name')}"] = str(exc)
        return out, [node_of(n) for n in nodes]

    def bind(self, namespace: str, name: str, node: str) -> None:
        """Bind the pod to the node (a Binding, as a scheduler does); the node need not
        exist yet: the pod starts when its kubelet registers."""
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        # 404: the pod went (the loop sees that itself); 409: already bound
        self._call("bind", self.core.create_namespaced_binding, namespace, body,
                   ok=(404, 409), _preload_content=False)
        self.changes += 1
        self.calls.append(("bind", f"{namespace}/{name} {node}"))

    def create(self, body: dict) -> None:
        md = body["metadata"]
        self._call("create pod", self.core.create_namespaced_pod, md["namespace"], body,
                   ok=(409,), _preload_content=False)
        self.changes += 1
        self.calls.append(("create", f"{md['namespace']}/{md['name']} "
                                     f"{body['spec'].get('nodeName', '')}".rstrip()))

    def delete(self, namespace: str, name: str) -> None:
        self._call("delete pod", self.core.delete_namespaced_pod, name, namespace,
                   grace_period_seconds=0, ok=(404,), _preload_content=False)
        self.changes += 1
        self.calls.append(("delete", f"{namespace}/{name}"))


def recreated(pod: Pod, name: str, node: str | None, annotations: dict[str, str]) -> dict:
    """The body of a new pod for ``pod``'s task: same spec and labels, a new name, bound
    to ``node`` (None: pending), with ``annotations`` added and the task key kept."""
    raw = pod.raw
    md = raw.get("metadata", {})
    spec = {k: v for k, v in (raw.get("spec") or {}).items() if k != "nodeName"}
    if node:
        spec["nodeName"] = node
    ann = {**(md.get("annotations") or {}), **annotations, TASK_KEY: pod.key}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": pod.namespace,
                         "labels": dict(md.get("labels") or {}), "annotations": ann},
            "spec": spec}


__all__ = ["KubeWork", "Node", "Pod", "node_of", "pod_of", "quantity", "recreated"]
