"""An emulated Kubernetes API (kmock) on 127.0.0.1 that also enforces resourceVersion preconditions.

kmock stores objects and serves the real REST paths but, like no controller-less emulator, it neither
bumps resourceVersion nor rejects a stale one. A real API server answers a patch carrying an outdated
metadata.resourceVersion with 409 Conflict; this subclass does the same, so claim races are real races.
"""

from __future__ import annotations

import asyncio
import itertools
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
