"""Pure helpers over canonical contents: build user/tool messages, read a model turn, size a request.

The loop never looks inside contents; these helpers and the adapters do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hummingbird_agent.models.base import Content, ModelRequest, ToolCall


def user_text(text: str) -> Content:
    """A user message with one text part (the task JSON, or a reply on resumption)."""
    return {"role": "user", "parts": [{"text": text}]}


def tool_message(calls: Sequence[ToolCall], responses: Sequence[Mapping[str, Any]]) -> Content:
    """One `tool` message answering every call of a model turn, in order."""
    parts = []
    for call, response in zip(calls, responses, strict=True):
        body: dict[str, Any] = {"name": call.name, "response": dict(response)}
        if call.call_id:
            body["id"] = call.call_id
        parts.append({"functionResponse": body})
    return {"role": "tool", "parts": parts}


def read_model_turn(content: Content | None) -> tuple[tuple[ToolCall, ...], str]:
    """The function calls and the joined visible text of a canonical model message."""
    calls: list[ToolCall] = []
    texts: list[str] = []
    for part in (content or {}).get("parts") or []:
        if "functionCall" in part:
            fc = part["functionCall"] or {}
            calls.append(ToolCall(str(fc.get("name", "")), fc.get("args", {}), fc.get("id")))
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
    return tuple(calls), "".join(texts)


def answered_tools(contents: Sequence[Content]) -> set[str]:
    """Names of the tools whose calls in `contents` were answered with a result, not an error."""
    return {fr.get("name", "") for c in contents if c.get("role") == "tool" for p in c.get("parts") or []
            if isinstance(fr := p.get("functionResponse"), dict) and "error" not in (fr.get("response") or {})}


def wire_contents(contents: Sequence[Content]) -> list[Content]:
    """Canonical contents in Gemini wire form: the `tool` role becomes `user` (Gemini knows only user/model)."""
    return [{**c, "role": "user"} if c.get("role") == "tool" else c for c in contents]


def wire_body(request: ModelRequest) -> dict[str, Any]:
    """The Gemini REST body of a request (used to measure what is sent; the SDK builds the same shape)."""
    body: dict[str, Any] = {
        "contents": wire_contents(request.contents),
        "systemInstruction": {"parts": [{"text": request.full_system}]},
    }
    if request.tools:
        declarations = [
            {"name": t.name, "description": t.description, "parametersJsonSchema": dict(t.parameters)}
            for t in request.tools
        ]
        body["tools"] = [{"functionDeclarations": declarations}]
        mode = "AUTO" if request.tools_enabled else "NONE"
        body["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
    return body


def with_call_ids(contents: Sequence[Content]) -> list[Content]:
    """Contents where every functionCall and functionResponse carries an `id` (providers that match results
    to calls by id need one). A saved id is kept; a missing one (a session started on Gemini, which matches
    by order) becomes `call_<message>_<k>`, and the tool message that follows gets the same ids in order."""
    out: list[Content] = []
    pending: list[str] = []
    for index, content in enumerate(contents):
        parts: list[dict[str, Any]] = []
        responses = 0
        for part in content.get("parts") or []:
            if "functionCall" in part:
                call = dict(part["functionCall"] or {})
                call["id"] = call.get("id") or f"call_{index}_{len(parts)}"
                pending.append(call["id"])
                part = {**part, "functionCall": call}
            elif "functionResponse" in part:
                response = dict(part["functionResponse"] or {})
                fallback = pending[responses] if responses < len(pending) else f"call_{index}_{responses}"
                response["id"] = response.get("id") or fallback
                responses += 1
                part = {**part, "functionResponse": response}
            parts.append(part)
        if content.get("role") == "model":
            pending = [p["functionCall"]["id"] for p in parts if "functionCall" in p]
        out.append({**content, "parts": parts})
    return out


def wire_size_bytes(request: ModelRequest) -> int:
    """Bytes of the JSON body a request puts on the wire."""
    return len(json.dumps(wire_body(request), separators=(",", ":")).encode())
