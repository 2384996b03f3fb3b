"""What the fake HTTP servers exchange with their routes: the request as received, the response a route
returns, and the error a route raises to answer with the faked API's error shape."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs


@dataclass(frozen=True, slots=True)
class Request:
    """One request as the server saw it; `path` is the raw (still percent-encoded) path."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        """Case-insensitive header lookup."""
        lowered = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == lowered), None)

    def json(self) -> Any:
        """The body parsed as JSON (None when empty)."""
        return json.loads(self.body) if self.body else None

    def arg(self, name: str, default: Any = None) -> Any:
        """A parameter from the JSON/form body, else from the query string (first value)."""
        data = self.form()
        if name in data:
            return data[name]
        values = self.query.get(name)
        return values[0] if values else default

    def form(self) -> dict[str, Any]:
        """The body as a dict: JSON object or url-encoded form; {} otherwise."""
        if not self.body:
            return {}
        if (self.header("Content-Type") or "").startswith("application/x-www-form-urlencoded"):
            return {k: v[0] for k, v in parse_qs(self.body.decode(), keep_blank_values=True).items()}
        try:
            data = json.loads(self.body)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}


@dataclass(slots=True)
class Response:
    """What a route returns; an iterable body is sent with chunked transfer encoding."""

    status: int = 200
    body: bytes | Iterable[bytes] = b""
    headers: dict[str, str] = field(default_factory=dict)
    # Sleep before answering, outside the server lock, to fake model or network latency.
    delay_s: float = 0.0


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response with the right content type."""
    merged = {"Content-Type": "application/json"} | (headers or {})
    return Response(status, json.dumps(obj).encode(), merged)


Handler = Callable[..., Response]


class HTTPError(Exception):
    """Raised by a route to answer with the API's error shape."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message
