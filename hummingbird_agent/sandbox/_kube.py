"""Kubernetes adapter for the sandbox backends: the only importer of the `kubernetes` client.

The client is synchronous; every call runs in a thread. API errors become SandboxError / ConfigError here.
Exec uses the websocket exec API (v5.channel.k8s.io, which can close stdin) with binary frames.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import urllib3
from kubernetes.config.config_exception import ConfigException
from kubernetes.stream import stream as k8s_stream
from kubernetes.stream.ws_client import STDIN_CHANNEL, V5_CHANNEL_PROTOCOL, WSClient
from websocket import WebSocketException

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import ConfigError, SandboxError
from kubernetes import client as k8s
from kubernetes import config as k8s_config

T = TypeVar("T")
# Chunks buffered per exec stream before the websocket reader waits for the consumer (backpressure).
_QUEUE_CHUNKS = 16
_POLL_S = 0.2
CONFLICT, NOT_FOUND = 409, 404


class KubeError(SandboxError):
    """A Kubernetes API call failed; `status` is the HTTP status (0 when the server was unreachable)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@contextlib.contextmanager
def _mapped(what: str) -> Iterator[None]:
    try:
        yield
    except k8s.ApiException as exc:
        raise KubeError(f"kubernetes {what}: HTTP {exc.status} {exc.reason}", exc.status or 0) from exc
    except (OSError, ValueError, urllib3.exceptions.HTTPError) as exc:
        raise KubeError(f"kubernetes {what}: {type(exc).__name__}", 0) from exc


def load_api_client(config: SandboxConfig) -> k8s.ApiClient:
    """An ApiClient from the configured kubeconfig or the in-cluster service account (ConfigError if neither)."""
    cfg = k8s.Configuration()
    try:
        if config.kubeconfig:
            k8s_config.load_kube_config(config_file=config.kubeconfig, client_configuration=cfg)
        else:
            k8s_config.load_incluster_config(client_configuration=cfg)
    except (ConfigException, OSError) as exc:
        source = f"kubeconfig {config.kubeconfig!r}" if config.kubeconfig else "in-cluster service account"
        raise ConfigError(f"sandbox.backend {config.backend}: cannot use the {source}: {exc}") from None
    return k8s.ApiClient(cfg)


class KubeApi:
    """The pod operations the sandbox backends need, async and error-mapped."""

    def __init__(self, api_client: k8s.ApiClient, namespace: str) -> None:
        self._client = api_client
        self._core = k8s.CoreV1Api(api_client)
        self.namespace = namespace

    async def _call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        def run() -> T:
            with _mapped(what):
                return fn(*args, **kwargs)

        return await asyncio.to_thread(run)

    @classmethod
    async def connect(cls, config: SandboxConfig) -> KubeApi:
        """Load credentials and check that the namespace's pods can be listed; ConfigError if not."""
        api = cls(await asyncio.to_thread(load_api_client, config), config.namespace)
        try:
            await api._call("list pods", api._core.list_namespaced_pod, api.namespace, limit=1)
        except KubeError as exc:
            await api.close()
            raise ConfigError(f"sandbox.backend {config.backend}: namespace {config.namespace!r}: {exc}") from None
        return api

    async def close(self) -> None:
        await asyncio.to_thread(self._client.close)

    async def create_pod(self, manifest: dict[str, Any]) -> None:
        await self._call("create pod", self._core.create_namespaced_pod, self.namespace, manifest)

    async def read_pod(self, name: str) -> dict[str, Any]:
        pod = await self._call("read pod", self._core.read_namespaced_pod, name, self.namespace)
        manifest: dict[str, Any] = self._client.sanitize_for_serialization(pod)
        return manifest

    async def list_pods(self, selector: dict[str, str]) -> list[dict[str, Any]]:
        text = ",".join(f"{k}={v}" for k, v in selector.items())
        pods = await self._call("list pods", self._core.list_namespaced_pod, self.namespace, label_selector=text)
        return [self._client.sanitize_for_serialization(p) for p in pods.items]

    async def patch_pod(self, name: str, patch: dict[str, Any]) -> None:
        await self._call("patch pod", self._core.patch_namespaced_pod, name, self.namespace, patch)

    async def delete_pod(self, name: str) -> None:
        try:
            await self._call("delete pod", self._core.delete_namespaced_pod, name, self.namespace,
                             grace_period_seconds=0)  # fmt: skip
        except KubeError as exc:
            if exc.status != NOT_FOUND:
                raise

    async def open_exec(self, pod: str, argv: list[str], stdin: bool) -> ExecSocket:
        ws = await self._call(
            "exec", k8s_stream, self._core.connect_get_namespaced_pod_exec, pod, self.namespace,
            command=argv, stdin=stdin, stdout=True, stderr=True, tty=False,
            _preload_content=False, binary=True,
        )  # fmt: skip
        channel = ExecSocket(ws, asyncio.get_running_loop())
        channel.start()
        return channel


class ExecSocket:
    """An exec websocket as a sandbox Channel: a reader thread pumps stdout/stderr into bounded queues."""

    def __init__(self, ws: WSClient, loop: asyncio.AbstractEventLoop) -> None:
        self._ws = ws
        self._loop = loop
        self._out: asyncio.Queue[bytes] = asyncio.Queue(_QUEUE_CHUNKS)
        self._err: asyncio.Queue[bytes] = asyncio.Queue(_QUEUE_CHUNKS)
        self._done = asyncio.Event()
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._pump, name="k8s-exec", daemon=True).start()

    def _put(self, queue: asyncio.Queue[bytes], data: bytes) -> None:
        """Hand data to the event loop, waiting while the consumer is behind, unless aborted meanwhile."""
        fut = asyncio.run_coroutine_threadsafe(queue.put(data), self._loop)
        while not self._stop.is_set():
            try:
                fut.result(timeout=_POLL_S)
                return
            except concurrent.futures.TimeoutError:
                continue
        fut.cancel()

    def _pump(self) -> None:
        try:
            while self._ws.is_open() and not self._stop.is_set():
                try:
                    self._ws.update(timeout=_POLL_S)
                except (OSError, ValueError, WebSocketException):
                    break  # the connection broke (the pod went away): the streams end here
                if self._ws.peek_stdout():
                    self._put(self._out, self._ws.read_stdout())
                if self._ws.peek_stderr():
                    self._put(self._err, self._ws.read_stderr())
        finally:
            for queue in (self._out, self._err):
                self._put(queue, b"")
            self._loop.call_soon_threadsafe(self._done.set)

    async def write(self, data: bytes) -> None:
        for i in range(0, len(data), budgets.STREAM_CHUNK_BYTES):
            await asyncio.to_thread(self._ws.write_stdin, data[i : i + budgets.STREAM_CHUNK_BYTES])

    async def close_stdin(self) -> None:
        if self._ws.subprotocol != V5_CHANNEL_PROTOCOL:
            raise SandboxError("kubernetes exec: the API server lacks v5.channel.k8s.io, stdin cannot be closed")
        await asyncio.to_thread(self._ws.close_channel, STDIN_CHANNEL)

    async def read_stdout(self) -> bytes:
        return await self._out.get()

    async def read_stderr(self) -> bytes:
        return await self._err.get()

    async def wait(self) -> int:
        await self._done.wait()
        code = self._ws.returncode
        return -1 if code is None else int(code)

    async def abort(self) -> None:
        self._stop.set()
        await self._done.wait()  # the reader thread stops within _POLL_S; closing under it races its poll
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self._ws.close()
        if self._ws.sock is not None:
            self._ws.sock.shutdown()  # close() leaves the socket open when the server closed the connection
