"""Fake Qdrant REST server: the collection calls a server-mode vector store makes while it opens (exists,
create, payload indexes), in Qdrant's response envelope. Enough to open a store on it; stopping the fake
then leaves that store's server unreachable, as a Qdrant that went down."""

from __future__ import annotations

from typing import Any

from tests.servers.base import FakeHTTPServer, HTTPError, Request, Response, json_response


def _ok(result: Any) -> Response:
    return json_response({"result": result, "status": "ok", "time": 0.0001})


class QdrantServer(FakeHTTPServer):
    """Collections by name: the vector config each was created with and its payload indexes."""

    name = "qdrant"

    def __init__(self) -> None:
        super().__init__()
        self.collections: dict[str, dict[str, Any]] = {}
        self.route("GET", r"/collections/(?P<name>[^/]+)/exists", self._exists)
        self.route("PUT", r"/collections/(?P<name>[^/]+)", self._create)
        self.route("PUT", r"/collections/(?P<name>[^/]+)/index", self._index)
        self.route("DELETE", r"/collections/(?P<name>[^/]+)", self._delete)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return {"status": {"error": message}, "time": 0.0001}

    def _exists(self, req: Request, name: str) -> Response:
        return _ok({"exists": name in self.collections})

    def _create(self, req: Request, name: str) -> Response:
        if name in self.collections:
            raise HTTPError(409, f"Wrong input: Collection `{name}` already exists!")
        self.collections[name] = {"vectors": (req.json() or {}).get("vectors"), "indexes": {}}
        return _ok(True)

    def _index(self, req: Request, name: str) -> Response:
        if name not in self.collections:
            raise HTTPError(404, f"Not found: Collection `{name}` doesn't exist!")
        body = req.json() or {}
        self.collections[name]["indexes"][body.get("field_name")] = body.get("field_schema")
        return _ok({"operation_id": 0, "status": "completed"})

    def _delete(self, req: Request, name: str) -> Response:
        # Qdrant answers `false` for a collection that does not exist, not an error.
        return _ok(self.collections.pop(name, None) is not None)
