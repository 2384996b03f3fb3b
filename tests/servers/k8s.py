"""Fake Kubernetes API / Kubearchive for the Konflux data source: Tekton list endpoints with label
selectors, `limit` + continue-token pagination and gzip, pods and container logs; objects are shaped
from real Tekton payload samples. Huge list pages are generated lazily, never held in memory."""

from __future__ import annotations

import base64
import copy
import json
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tests.servers import samples
from tests.servers.base import FakeHTTPServer, Request, Response, chunked, json_response

_NS = r"/namespaces/(?P<ns>[^/]+)"
_TEKTON = r"/apis/tekton.dev/v1" + _NS + r"/(?P<kind>pipelineruns|taskruns)"
_POD = r"/api/v1" + _NS + r"/pods/(?P<pod>[^/]+)"
STREAM_CHUNK_BYTES = 64 * 1024
_SAMPLE = {"pipelineruns": "tekton/tektoncd_chains_v1_pipelinerun-childrefs.json",
           "taskruns": "tekton/tektoncd_chains_v1_taskrun1.json"}
_LIST_KIND = {"pipelineruns": "PipelineRunList", "taskruns": "TaskRunList"}


def tekton_object(kind: str, name: str, *, namespace: str = "tenant", labels: dict[str, str] | None = None,
                  reason: str = "Succeeded", status: str = "True", uid: str | None = None,
                  pod: str | None = None) -> dict[str, Any]:
    """A PipelineRun or TaskRun (kind "pipelineruns"/"taskruns") built from a real Tekton sample."""
    obj = samples.load(_SAMPLE[kind])
    obj.update(apiVersion="tekton.dev/v1", kind="PipelineRun" if kind == "pipelineruns" else "TaskRun")
    obj["metadata"] = {"name": name, "namespace": namespace, "uid": uid or str(uuid.uuid4()),
                       "labels": dict(labels or {}), "creationTimestamp": "2026-01-05T09:00:00Z"}
    obj["status"]["conditions"][0].update(reason=reason, status=status, message=f"{name}: {reason}")
    if pod is not None:
        obj["status"]["podName"] = pod
    return obj


def _matches(labels: dict[str, str], selector: str) -> bool:
    """Equality-based label selectors (`a=b,c==d,e!=f`), as the API server evaluates them."""
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
            continue
        key, value = term.replace("==", "=").split("=", 1)
        if labels.get(key) != value:
            return False
    return True


def gzip_stream(parts: Iterable[bytes], level: int = 1) -> Iterator[bytes]:
    """Gzip-compress an iterable of byte parts on the fly, emitting about STREAM_CHUNK_BYTES at a time."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)
    pending = bytearray()
    for part in parts:
        pending += compressor.compress(part)
        if len(pending) >= STREAM_CHUNK_BYTES:
            yield bytes(pending)
            pending.clear()
    pending += compressor.flush()
    yield bytes(pending)


class KubeServer(FakeHTTPServer):
    """One API endpoint (live cluster or Kubearchive) accepting `Authorization: Bearer <token>`."""

    def __init__(self, name: str = "kube", *, token: str = "kube-token", gzip: bool = False) -> None:
        super().__init__()
        self.name, self.token, self.gzip = name, token, gzip
        # Servers may return fewer items than `limit`; a small cap makes tests cross page boundaries.
        self.page_size: int | None = None
        self.objects: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.logs: dict[tuple[str, str, str], bytes] = {}
        # Lazily generated pages: (namespace, kind, labelSelector) -> factory of the JSON parts of one
        # whole list page (other selectors list the seeded objects as usual).
        self.generated: dict[tuple[str, str, str], Callable[[], Iterable[bytes]]] = {}
        # When set, the next list page's gzip stream is cut to this many bytes (framing stays valid).
        self.truncate_next_page_at: int | None = None
        self.route("GET", _TEKTON, self._list)
        self.route("GET", _POD, self._pod)
        self.route("GET", _POD + r"/log", self._log)

    # --- seeding -------------------------------------------------------------------------------
    def add(self, obj: dict[str, Any]) -> dict[str, Any]:
        kind = "pipelineruns" if obj["kind"] == "PipelineRun" else "taskruns"
        self.objects.setdefault((obj["metadata"]["namespace"], kind), []).append(obj)
        return obj

    def add_pod(self, namespace: str, name: str, logs: dict[str, bytes | str | None]) -> dict[str, Any]:
        """A pod whose containers are `logs`' keys; a None log is expired (404 from the log endpoint)."""
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4())},
               "spec": {"containers": [{"name": c, "image": "registry.example/step:1"} for c in logs]}}
        self.pods[(namespace, name)] = pod
        for container, text in logs.items():
            if text is not None:
                self.logs[(namespace, name, container)] = text.encode() if isinstance(text, str) else text
        return pod

    def copy_from(self, other: KubeServer) -> None:
        """Archive everything `other` holds (Kubearchive keeps what the live cluster had)."""
        for key, items in other.objects.items():
            self.objects.setdefault(key, []).extend(copy.deepcopy(items))

    # --- protocol ------------------------------------------------------------------------------
    def error_body(self, status: int, message: str) -> dict[str, Any]:
        reason = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 410: "Expired"}.get(status, "InternalError")
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": reason, "code": status}

    def authorize(self, req: Request) -> Response | None:
        if req.header("Authorization") != f"Bearer {self.token}":
            return self.error(401, "Unauthorized")
        return None

    def _list(self, req: Request, ns: str, kind: str) -> Response:
        selector = req.arg("labelSelector", "")
        factory = self.generated.get((ns, kind, selector))
        if factory is not None:
            return self._body(req, factory())
        items = [o for o in self.objects.get((ns, kind), []) if _matches(o["metadata"].get("labels", {}), selector)]
        limit = min(int(req.arg("limit", 0) or 0) or len(items) or 1, self.page_size or len(items) or 1)
        start = self._offset(req.arg("continue"))
        if start is None:
            return self.error(410, "The provided continue parameter is too old")
        page, end = items[start:start + limit], start + limit
        token = _token(end) if end < len(items) else ""
        metadata: dict[str, Any] = {"resourceVersion": "1", "continue": token}
        if token:
            metadata["remainingItemCount"] = len(items) - end
        # metadata after items: a client must not rely on key order to find the continue token.
        body = {"apiVersion": "tekton.dev/v1", "kind": _LIST_KIND[kind], "items": page, "metadata": metadata}
        return self._body(req, [json.dumps(body).encode()])

    def _offset(self, token: str | None) -> int | None:
        if not token:
            return 0
        try:
            return int(json.loads(base64.urlsafe_b64decode(token))["start"])
        except (ValueError, KeyError):
            return None

    def _body(self, req: Request, parts: Iterable[bytes]) -> Response:
        headers = {"Content-Type": "application/json"}
        wants_gzip = "gzip" in (req.header("Accept-Encoding") or "")
        if not (self.gzip and wants_gzip):
            return Response(200, (c for p in parts for c in chunked(p, STREAM_CHUNK_BYTES)), headers)
        headers["Content-Encoding"] = "gzip"
        stream: Iterable[bytes] = gzip_stream(parts)
        if self.truncate_next_page_at is not None:
            stream, self.truncate_next_page_at = _cut(stream, self.truncate_next_page_at), None
        return Response(200, stream, headers)

    def _pod(self, req: Request, ns: str, pod: str) -> Response:
        found = self.pods.get((ns, pod))
        return json_response(found) if found else self.error(404, f'pods "{pod}" not found')

    def _log(self, req: Request, ns: str, pod: str) -> Response:
        if (ns, pod) not in self.pods:
            return self.error(404, f'pods "{pod}" not found')
        text = self.logs.get((ns, pod, req.arg("container", "")))
        if text is None:
            return self.error(404, "log not found")
        return Response(200, chunked(text, STREAM_CHUNK_BYTES), {"Content-Type": "text/plain"})


def _token(start: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"start": start, "rv": "1"}).encode()).decode()


def _cut(stream: Iterable[bytes], limit: int) -> Iterator[bytes]:
    sent = 0
    for chunk in stream:
        room = limit - sent
        if room <= 0:
            return
        yield chunk[:room]
        sent += min(room, len(chunk))


def generated_page(kind: str, count: int, pad_bytes: int, namespace: str = "tenant") -> Callable[[], Iterator[bytes]]:
    """A factory of one list page of `count` distinct runs (each padded by `pad_bytes` of log-like text),
    produced part by part so the server never holds the page."""
    template = tekton_object(kind, "NAME", namespace=namespace, reason="Failed", status="False")
    template["status"]["conditions"][0]["message"] = "x" * pad_bytes
    head, _, tail = json.dumps(template).partition('"NAME"')

    def parts() -> Iterator[bytes]:
        kind_name = _LIST_KIND[kind].encode()
        yield b'{"apiVersion":"tekton.dev/v1","kind":"%s","metadata":{"continue":""},"items":[' % kind_name
        for n in range(count):
            item = head + f'"run-{n}"' + tail.replace(template["metadata"]["uid"], f"uid-{n:012d}", 1)
            yield (b"," if n else b"") + item.encode()
        yield b"]}"

    return parts
