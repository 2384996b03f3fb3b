"""Scripted fake of the Gemini REST API (generateContent, streamGenerateContent SSE, countTokens,
embedContent, batchEmbedContents) on /v1, /v1beta and /v1alpha; turns are given by the test."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.servers.base import FakeHTTPServer, HTTPError, Request, Response, json_response
from tests.servers.model_common import (
    Pace,
    Rule,
    StreamLog,
    count_text_tokens,
    next_turn_of,
    paced,
    prompt_texts,
    rule_turn,
    text_pieces,
)
from tests.servers.model_history import gemini_error

Turn = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]
_STATUS_NAMES = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
DEFAULT_EMBEDDING_DIM = 768


# --- turn builders ----------------------------------------------------------------------------
def text_part(text: str) -> dict[str, Any]:
    return {"text": text}


def function_call_part(name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args or {}}}


def usage(prompt: int = 100, candidates: int = 20, cached: int = 0, thoughts: int = 0) -> dict[str, Any]:
    """A usageMetadata object; totalTokenCount is derived like the real API does."""
    meta = {"promptTokenCount": prompt, "candidatesTokenCount": candidates,
            "totalTokenCount": prompt + candidates + thoughts}
    if cached:
        meta["cachedContentTokenCount"] = cached
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    return meta


def model_turn(*parts: dict[str, Any], usage_metadata: dict[str, Any] | None = None,
               finish_reason: str = "STOP", model_version: str = "gemini-2.5-flash") -> dict[str, Any]:
    """A full GenerateContentResponse with one candidate holding `parts`; without usage_metadata the
    server fills in an estimate from the request size."""
    content: dict[str, Any] = {"role": "model"}
    if parts:
        content["parts"] = list(parts)
    turn: dict[str, Any] = {
        "candidates": [{"content": content, "finishReason": finish_reason, "index": 0}],
        "modelVersion": model_version,
    }
    if usage_metadata is not None:
        turn["usageMetadata"] = usage_metadata
    return turn


def text_turn(text: str, **kwargs: Any) -> dict[str, Any]:
    return model_turn(text_part(text), **kwargs)


def function_call_turn(name: str, args: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    return model_turn(function_call_part(name, args), **kwargs)


def empty_turn(**kwargs: Any) -> dict[str, Any]:
    """A candidate with no parts, as Gemini sometimes returns."""
    return model_turn(**kwargs)


# --- embeddings ---------------------------------------------------------------------------------
def embed_text(text: str, dim: int = DEFAULT_EMBEDDING_DIM) -> list[float]:
    """Deterministic unit vector from hashed words: equal texts are identical, texts sharing words
    are close, so similarity search behaves sensibly in tests."""
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()) or [""]:
        digest = hashlib.sha256(word.encode()).digest()
        vec[int.from_bytes(digest[:4], "big") % dim] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def _content_text(content: dict[str, Any] | None) -> str:
    return " ".join(p.get("text", "") for p in (content or {}).get("parts", []))


@dataclass(frozen=True, slots=True)
class GeminiCall:
    """One API call as the fake understood it."""

    version: str
    model: str
    method: str
    body: dict[str, Any]


class GeminiServer(FakeHTTPServer):
    """Pops one scripted turn per generateContent call; records every call in `calls`."""

    name = "gemini"

    def __init__(self, *, api_key: str | None = "test-key", latency_s: float = 0.0) -> None:
        super().__init__()
        self.api_key = api_key
        self.latency_s = latency_s
        self.turns: deque[Turn] = deque()
        self.responder: Turn | None = None  # answers every call once the scripted turns are used up
        self.calls: list[GeminiCall] = []
        self.served = 0
        self.route("POST", r"(?:/[^:]*)?/(?P<version>v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):(?P<method>\w+)",
                   self._handle)
        # Vertex AI: /v1beta1/projects/P/locations/L/publishers/google/models/M:method with a Bearer token.
        self.route("POST", r"/(?P<version>v1|v1beta1)/projects/[^/]+/locations/[^/]+/publishers/google/models/"
                           r"(?P<model>[^/:]+):(?P<method>\w+)", self._handle)
        self.bearer: str | None = None
        self.pace = Pace()
        """How streamed answers are written (slowly, with a stall)."""
        self.streams: list[StreamLog] = []

    def script(self, *turns: Turn) -> None:
        """Append model turns: response dicts (see model_turn) or callables(request_body) -> dict."""
        self.turns.extend(turns)

    def respond_with(self, rule: Rule) -> None:
        """Answer every call the scripted turns do not cover from its prompt: `rule(system, user)`."""
        self.responder = rule_turn(rule)

    @property
    def prompts(self) -> list[tuple[str, str]]:
        """(system, user) of every generation call, in the order received."""
        return [prompt_texts(c.body) for c in self.generate_calls]

    @property
    def generate_calls(self) -> list[GeminiCall]:
        """generateContent and streamGenerateContent calls, in order."""
        return [c for c in self.calls if c.method in ("generateContent", "streamGenerateContent")]

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "status": _STATUS_NAMES.get(status, "UNKNOWN")}}

    def authorize(self, req: Request) -> Response | None:
        if "/projects/" in req.path:  # Vertex AI authenticates with an OAuth access token
            if self.bearer is not None and req.header("Authorization") == f"Bearer {self.bearer}":
                return None
            return json_response(self.error_body(401, "Request had invalid authentication credentials."), 401)
        given = req.header("x-goog-api-key") or req.arg("key")
        if self.api_key is None or given == self.api_key:
            return None
        body = self.error_body(400, "API key not valid. Please pass a valid API key.")
        body["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                     "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]
        return json_response(body, 400)

    def _handle(self, req: Request, version: str, model: str, method: str) -> Response:
        body = req.json() or {}
        self.calls.append(GeminiCall(version, model, method, body))
        handlers: dict[str, Callable[[dict[str, Any]], Response]] = {
            "generateContent": lambda b: json_response(self._next_turn(b, req)),
            "streamGenerateContent": lambda b: self._stream(self._next_turn(b, req)),
            "countTokens": _count_tokens,
            "embedContent": lambda b: json_response({"embedding": self._embedding(b)}),
            "batchEmbedContents": lambda b: json_response(
                {"embeddings": [self._embedding(r) for r in b.get("requests", [])]}),
        }
        if method not in handlers:
            raise HTTPError(404, f"method {method} is not faked")
        generating = method in ("generateContent", "streamGenerateContent")
        refused = gemini_error(body.get("contents") or []) if generating else None
        if refused:
            return json_response(self.error_body(400, refused), 400)
        resp = handlers[method](body)
        resp.delay_s = self.latency_s
        return resp

    def _next_turn(self, body: dict[str, Any], req: Request) -> dict[str, Any]:
        turn = next_turn_of(self.turns, self.responder)
        if turn is None:
            message = f"scripted gemini server: no model turns left ({self.served} served)"
            self.errors.append(message)
            raise HTTPError(500, message)
        self.served += 1
        reply = turn(body) if callable(turn) else json.loads(json.dumps(turn))
        reply.setdefault("responseId", f"fake-{self.served}")
        if "usageMetadata" not in reply:
            out = len(json.dumps(reply["candidates"])) // 4
            reply["usageMetadata"] = usage(prompt=max(1, len(req.body) // 4), candidates=out)
        return reply

    def _stream(self, reply: dict[str, Any]) -> Response:
        return Response(200, paced(_sse_chunks(reply), self.pace, self.streams), {"Content-Type": "text/event-stream"})

    def _embedding(self, request: dict[str, Any]) -> dict[str, Any]:
        dim = int(request.get("outputDimensionality") or DEFAULT_EMBEDDING_DIM)
        return {"values": embed_text(_content_text(request.get("content")), dim)}


def _count_tokens(body: dict[str, Any]) -> Response:
    """countTokens: the contents' tokens by the fakes' tokenizer; no contents is refused as the API refuses it."""
    contents = body.get("contents") or body.get("generateContentRequest", {}).get("contents", [])
    if not contents:
        return json_response({"error": {"code": 400, "message": "* GenerateContentRequest.contents: contents is not "
                                        "specified\n", "status": "INVALID_ARGUMENT"}}, 400)
    return json_response({"totalTokens": sum(count_text_tokens(_content_text(c)) for c in contents)})


def _sse_chunks(reply: dict[str, Any]) -> list[bytes]:
    """streamGenerateContent?alt=sse: a text part a few words a chunk (its other keys, such as a thought signature,
    on its last piece), any other part in one chunk; the last chunk carries finishReason and usageMetadata."""
    candidate = reply["candidates"][0]
    pieces: list[dict[str, Any]] = []
    for part in (candidate.get("content") or {}).get("parts") or [{"text": ""}]:
        if isinstance(part.get("text"), str):
            texts = text_pieces(part["text"])
            rest = {k: v for k, v in part.items() if k != "text"}
            pieces += [{"text": t, **({"thought": True} if part.get("thought") else {})} for t in texts[:-1]]
            pieces.append({**rest, "text": texts[-1]})
        else:
            pieces.append(part)
    events = []
    for index, part in enumerate(pieces):
        chunk_candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        event: dict[str, Any] = {"candidates": [chunk_candidate], "modelVersion": reply.get("modelVersion")}
        if index == len(pieces) - 1:
            chunk_candidate["finishReason"] = candidate.get("finishReason", "STOP")
            event["usageMetadata"] = reply["usageMetadata"]
        events.append(b"data: " + json.dumps(event).encode() + b"\r\n\r\n")
    return events
