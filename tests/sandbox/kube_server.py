"""An emulated Kubernetes API (kmock) on 127.0.0.1 that also enforces resourceVersion preconditions.

kmock stores objects and serves the real REST paths but, like no controller-less emulator, it neither
bumps resourceVersion nor rejects a stale one. A real API server answers a patch carrying an outdated
metadata.resourceVersion with 409 Conflict; this subclass does the same, so claim races are real races.

kmock has no exec endpoint either. With `exec_into` set (pod name -> container), `pods/NAME/exec` is served as
the API server serves it: a websocket speaking v5.channel.k8s.io (v4 without closing stdin), one byte of channel
before each message, the status on channel 3; the command runs in that Podman container (`podman exec`), which
plays the pod's container as a kubelet would run it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import aiohttp.web
import attrs
import kmock


@attrs.frozen
class ResourceVersionConflict(kmock.KubernetesError):
    status: int = 409
    reason: str = "Conflict"
    message: str = "the object has been modified; please apply your changes to the latest version"


@attrs.define(kw_only=True)
class StrictEmulator(kmock.KubernetesEmulator):
    _versions: Any = attrs.field(factory=lambda: itertools.count(1), init=False)
    _writes: asyncio.Lock = attrs.field(factory=asyncio.Lock, init=False)
    exec_into: Callable[[str], str | None] | None = attrs.field(default=None, init=False)
    exec_requests: list[list[str]] = attrs.field(factory=list, init=False)

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        match = _EXEC_PATH.fullmatch(raw_request.path)
        container = self.exec_into(match.group(2)) if match and self.exec_into else None
        if container is None:
            return await super().__call__(raw_request)
        self.exec_requests.append(raw_request.query.getall("command"))
        return await _exec_websocket(raw_request, container)

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        if request.resource is None or request.action not in (kmock.action.CREATE, kmock.action.UPDATE):
            return await super()._handle(request)
        async with self._writes:  # check-and-write is atomic, as in etcd
            meta = request.data.setdefault("metadata", {})
            if request.action == kmock.action.UPDATE and "resourceVersion" in meta:
                key = (request.resource, request.namespace, request.name)
                stored = self.objects[key].get("metadata", {}).get("resourceVersion") if key in self.objects else None
                if stored is not None and stored != meta["resourceVersion"]:
                    return await self._render_error(ResourceVersionConflict())
            meta["resourceVersion"] = str(next(self._versions))
            return await super()._handle(request)

    def pods(self, namespace: str) -> dict[str, dict[str, Any]]:
        """Live pods of a namespace by name, as stored."""
        return {
            name: obj.raw
            for (resource, ns, name), obj in self.objects.items()
            if resource.plural == "pods" and ns == namespace and not obj.deleted
        }


_EXEC_PATH = re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/exec")
_STDIN, _STDOUT, _STDERR, _STATUS, _CLOSE = 0, 1, 2, 3, 255


async def _exec_websocket(request: aiohttp.web.BaseRequest, container: str) -> aiohttp.web.WebSocketResponse:
    ws = aiohttp.web.WebSocketResponse(protocols=("v5.channel.k8s.io", "v4.channel.k8s.io"))
    await ws.prepare(request)
    stdin = request.query.get("stdin") == "true"
    proc = await asyncio.create_subprocess_exec(
        "podman", "exec", *(["-i"] if stdin else []), container, *request.query.getall("command"),
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [asyncio.ensure_future(_pump(stream, ws, channel))
             for stream, channel in ((proc.stdout, _STDOUT), (proc.stderr, _STDERR))]
    feeding = asyncio.ensure_future(_feed(ws, proc))
    try:
        await asyncio.gather(*pumps)
        code = await proc.wait()
        status = {"metadata": {}, "status": "Success"} if code == 0 else {
            "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
        with contextlib.suppress(ConnectionError):
            await ws.send_bytes(bytes([_STATUS]) + json.dumps(status).encode())
    finally:
        feeding.cancel()
        for pump in pumps:
            pump.cancel()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await ws.close()
    return ws


async def _pump(stream: asyncio.StreamReader, ws: aiohttp.web.WebSocketResponse, channel: int) -> None:
    while data := await stream.read(65536):
        with contextlib.suppress(ConnectionError):
            await ws.send_bytes(bytes([channel]) + data)


async def _feed(ws: aiohttp.web.WebSocketResponse, proc: asyncio.subprocess.Process) -> None:
    """The client's stdin to the command; the client closing the websocket kills the command."""
    async for message in ws:
        if message.type != aiohttp.WSMsgType.BINARY or proc.stdin is None:
            continue
        channel, data = message.data[0], message.data[1:]
        with contextlib.suppress(ConnectionError):
            if channel == _STDIN:
                proc.stdin.write(data)
                await proc.stdin.drain()
            elif channel == _CLOSE and data[:1] == bytes([_STDIN]):
                proc.stdin.close()
    if proc.returncode is None:
        proc.kill()
