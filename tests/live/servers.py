"""Local API servers for the live tests: moto (EC2, SQS, EventBridge) and kmock (Kubernetes)
on 127.0.0.1, each in a thread of its own. kmock has no binding semantics: a reaction here
gives it the apiserver's (a Binding sets the pod's spec.nodeName; a second one is a 409).
``inject_faults`` makes the next requests that match fail with the given HTTP statuses."""

import asyncio
import contextlib
import logging
import threading

import kmock
from kubernetes import client

PODS = kmock.resource('', 'v1', 'pods')
NODES = kmock.resource('', 'v1', 'nodes')
BINDINGS = kmock.resource('', 'v1', 'bindings')


# --------------------------------------------------------------------------------------------------
# Server in a background thread
# --------------------------------------------------------------------------------------------------
class _InFlightOnlyEmulator(kmock.KubernetesEmulator):
    """
    kmock records every request forever, and EVERY later request re-scans that history for EVERY
    reaction (`request in reaction._source`), so per-request cost grows linearly (O(n^2) overall).
    This drops each request from the history once served (keeps only in-flight ones).
    Cost: `emu['list', PODS]`-style request assertions and history slices `[a:b]` stop working.
    NB: touches the private `_requests` list of kmock.Root.
    """
    async def _handle(self, request):
        try:
            return await super()._handle(request)
        finally:
            with contextlib.suppress(ValueError):
                self._requests.remove(request)  # Request has eq=False -> removal by identity


class KmockURL(str):
    """The base URL (usable as a plain str) + handles to the live emulator and its loop."""
    emulator: kmock.KubernetesEmulator
    loop: asyncio.AbstractEventLoop

    def call(self, fn, *args, **kwargs):
        """Run a sync fn(*args, **kwargs) inside the server's loop thread (e.g. to add reactions)."""
        async def _run():
            return fn(*args, **kwargs)
        return asyncio.run_coroutine_threadsafe(_run(), self.loop).result(10)


@contextlib.contextmanager
def kmock_server(*setups, keep_requests=False, host='127.0.0.1', port=None, timeout=10.0):
    """
    Start kmock.KubernetesEmulator on http://127.0.0.1:<random port> in a daemon thread with its own loop.
    Yields the base URL (a str subclass with .emulator and .call()). Stops the server & joins the thread on exit.
    `setups` are sync callables `fn(emulator)` run inside the loop before the URL is yielded.
    """
    ready = threading.Event()
    box = {}

    async def serve():
        stop = asyncio.Event()
        emu_cls = kmock.KubernetesEmulator if keep_requests else _InFlightOnlyEmulator
        async with emu_cls() as emu, kmock.Server(emu, host=host, port=port) as srv:
            # Without this, listing a resource that never had an object is a 404 "Resource Not Found".
            emu.resources.load_bundled()  # 71 builtin resources (v1/pods, v1/nodes, v1/bindings, ...)
            for setup in setups:
                setup(emu)
            box.update(emu=emu, url=str(srv.url).rstrip('/'), stop=stop, loop=asyncio.get_running_loop())
            ready.set()
            await stop.wait()

    def run():
        try:
            asyncio.run(serve())
        except BaseException as e:  # surfaced to the caller below
            box['error'] = e
        finally:
            ready.set()

    thread = threading.Thread(target=run, name='kmock-server', daemon=True)
    thread.start()
    ready.wait(timeout)
    if 'url' not in box:
        thread.join(timeout)
        raise RuntimeError(f"kmock server failed to start: {box.get('error')!r}")
    url = KmockURL(box['url'])
    url.emulator, url.loop = box['emu'], box['loop']
    try:
        yield url
    finally:
        box['loop'].call_soon_threadsafe(box['stop'].set)
        thread.join(timeout)
        if thread.is_alive():
            raise RuntimeError("kmock server thread did not stop")
        if 'error' in box:
            raise box['error']


def make_api(url, **cfg_attrs) -> client.CoreV1Api:
    cfg = client.Configuration()
    cfg.host = str(url)
    for k, v in cfg_attrs.items():
        setattr(cfg, k, v)
    return client.CoreV1Api(client.ApiClient(cfg))


# --------------------------------------------------------------------------------------------------
# Binding semantics (kmock has none): POST pods/{name}/binding and POST bindings -> set spec.nodeName
# --------------------------------------------------------------------------------------------------
def install_pod_binding(emu: kmock.KubernetesEmulator) -> None:
    async def bind(request: kmock.Request):
        body = request.data or {}
        ns = request.namespace
        if request.resource == BINDINGS:  # create_namespaced_binding: POST /api/v1/namespaces/{ns}/bindings
            pod_name = body['metadata']['name']
            # kmock's generic CREATE bookkeeping already stored a 'bindings' object before this reaction ran;
            # drop it, otherwise a 2nd binding with the same name gets 409 from kmock itself.
            del emu.objects[BINDINGS, ns, pod_name]
        else:  # create_namespaced_pod_binding: POST /api/v1/namespaces/{ns}/pods/{name}/binding
            pod_name = request.name
        key = (PODS, ns, pod_name)
        if key not in emu.objects or emu.objects[key].deleted:
            raise kmock.KubernetesObjectNotFoundError()
        pod = emu.objects[key]
        if pod.get('spec', {}).get('nodeName'):
            raise kmock.KubernetesError(status=409, reason='Conflict',
                                        message=f"pod {pod_name} is already assigned to node {pod['spec']['nodeName']}")
        pod.patch({'spec': {'nodeName': body['target']['name']}})  # new history version; no watch event
        # Real apiserver returns a Status; returning the Binding keeps the client's V1Binding deserializer happy.
        return kmock.Response(status=201, payload=body)

    emu['post', PODS, kmock.subresource('binding')] << bind
    emu['create', BINDINGS] << bind


# --------------------------------------------------------------------------------------------------
# Fault injection: the next len(statuses) matching requests fail, then the emulator serves normally
# --------------------------------------------------------------------------------------------------
def inject_faults(emu: kmock.KubernetesEmulator, statuses, *criteria, retry_after=None):
    """E.g. inject_faults(emu, [429, 500, 503], 'list', PODS). Call it in the loop thread: url.call(...)."""
    it = iter(list(statuses))

    def fault():
        status = next(it, None)
        if status is None:
            return NotImplemented  # -> kmock disables this reaction and falls through to lower priorities
        # Headers returned this way are merged INTO the reaction and stick for later calls -> always set
        # Retry-After explicitly (None = omit).
        return kmock.Response(
            status=status,
            headers={'Retry-After': None if retry_after is None else str(retry_after)},
            payload={'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
                     'code': status, 'reason': 'InjectedFault', 'message': f'injected HTTP {status}'},
        )

    return emu[criteria] ** 100 << fault  # priority 100 beats default-priority (0) reactions & the -inf fallbacks


@contextlib.contextmanager
def moto_server():
    """moto's server on 127.0.0.1 (a free port); yields its URL."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    s = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    s.start()
    try:
        host, port = s.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        s.stop()


def aws_kw(url: str) -> dict:
    """boto3 client arguments for moto at ``url``."""
    return dict(endpoint_url=url, region_name="us-east-1", aws_access_key_id="testing",
                aws_secret_access_key="testing")


class FaultProxy:
    """An HTTP proxy on 127.0.0.1 in front of moto that answers chosen EC2 calls with the
    errors EC2 returns (throttling, 5xx, insufficient capacity) and forwards the rest.
    ``fail(action, status, code, times, itype)``: the next ``times`` calls of ``action``
    (for instance type ``itype``, if given) get that error."""

    def __init__(self, upstream: str) -> None:
        import http.server
        from urllib.parse import urlsplit

        self.upstream = urlsplit(upstream)
        self.rules: list[list] = []
        self.failed: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                err = proxy._match(body)
                if err is not None:
                    status, code = err
                    xml = (f'<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error>'
                           f'<Code>{code}</Code><Message>injected {code}</Message></Error>'
                           f'</Errors><RequestID>injected</RequestID></Response>').encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "text/xml")
                    self.send_header("Content-Length", str(len(xml)))
                    self.end_headers()
                    self.wfile.write(xml)
                    return
                import http.client

                conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port,
                                                  timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                conn.request("POST", self.path, body, headers)
                r = conn.getresponse()
                data = r.read()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def fail(self, action: str, status: int, code: str, times: int,
             itype: str | None = None) -> None:
        with self._lock:
            self.rules.append([action, itype, times, status, code])

    def _match(self, body: bytes):
        from urllib.parse import parse_qs

        try:
            form = parse_qs(body.decode())
        except UnicodeDecodeError:
            return None
        action = (form.get("Action") or [""])[0]
        itype = (form.get("InstanceType") or [""])[0]
        with self._lock:
            for rule in self.rules:
                if rule[0] == action and rule[2] > 0 and rule[1] in (None, itype):
                    rule[2] -= 1
                    self.failed.append((action, rule[4]))
                    return rule[3], rule[4]
        return None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def refuse_bindings(emu: kmock.KubernetesEmulator, times: int = 1):
    """The next ``times`` Bindings are refused with 403 Forbidden (as an apiserver whose
    RBAC does not allow them). kmock stores a created Binding before reactions run: it is
    dropped here, as ``install_pod_binding`` drops it, so that a later one is not a 409."""
    left = [times]

    async def refuse(request: kmock.Request):
        if left[0] <= 0:
            return NotImplemented
        left[0] -= 1
        body = request.data or {}
        key = (BINDINGS, request.namespace, body["metadata"]["name"])
        if key in emu.objects:
            del emu.objects[key]
        return kmock.Response(status=403, payload={
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "code": 403, "reason": "Forbidden", "message": "injected: bindings forbidden"})

    return emu["create", BINDINGS] ** 100 << refuse
