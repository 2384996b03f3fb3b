"""Scripted fake of the Anthropic Messages API (POST /v1/messages, and Claude on Vertex AI's rawPredict),
with prompt-cache accounting: a request reads from the cache the longest block prefix an earlier request
marked with `cache_control`, and writes the prefix up to its own last breakpoint. Structured output
(`output_config.format`): refused per model as a deployment without it refuses it, a schema with an open object
refused, and the scripted answer must be JSON matching the schema (constrained decoding allows nothing else)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import jsonschema

from tests.servers.base import HTTPError, Request, Response, json_response
from tests.servers.model_common import (
    ModelCall,
    ScriptedModelServer,
    count_text_tokens,
    paced,
    parse_response,
    tokens,
    turn_parts,
    turn_usage,
)
from tests.servers.model_history import anthropic_error
from tests.servers.model_streams import message_events

# What Messages count_tokens takes (anything else, max_tokens included, is a 400).
_COUNT_FIELDS = frozenset({"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers",
                           "cache_control", "output_config", "context_management", "speed"})
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                529: "overloaded_error"}


class AnthropicServer(ScriptedModelServer):
    name = "anthropic"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cached_prefixes: set[str] = set()
        self.bearer: str | None = None
        """Claude on Vertex AI: the OAuth access token its rawPredict requests must carry."""
        self.refuses_output_config: frozenset[str] = frozenset()
        """Models that refuse structured output with a 400, as older models and deployments without it do."""
        self.route("POST", r"/v1/messages", self._messages)
        self.route("POST", r"(?:/v1)?/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/"
                           r"(?P<model>[^/:]+):(?:rawPredict|streamRawPredict)", self._messages)
        self.route("POST", r"/v1/messages/count_tokens", self._count_tokens)
        self.route("POST", r"(?:/v1)?/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/"
                           r"count-tokens:rawPredict", self._count_tokens)
        self.count_calls: list[dict[str, Any]] = []

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}

    def authorize(self, req: Request) -> Response | None:
        if req.path.startswith(("/projects", "/v1/projects")):
            if self.bearer is not None and req.header("Authorization") == f"Bearer {self.bearer}":
                return None
            return self.error(401, "Request had invalid authentication credentials.")
        if self.api_key is None:
            return None
        # The SDK sends the key as x-api-key (older releases) or as a Bearer token (2.x).
        if self.api_key in (req.header("x-api-key"), (req.header("Authorization") or "").removeprefix("Bearer ")):
            return None
        return self.error(401, "invalid x-api-key")

    def _messages(self, req: Request, model: str | None = None) -> Response:
        wire = req.json() or {}
        view = gemini_view(wire)
        self.generate_calls.append(ModelCall(model or wire.get("model", ""), view, wire))
        if (model or wire.get("model")) in self.refuses_temperature and "temperature" in wire:  # any value
            return json_response(self.error_body(400, "`temperature` is deprecated for this model."), 400)
        refusal = (anthropic_error(wire.get("messages") or [])
                   or self._output_config_refusal(model or wire.get("model"), wire.get("output_config")))
        if refusal:
            return json_response(self.error_body(400, refusal), 400)
        turn = self.next_turn(view)
        reply = turn if "content" in turn and "candidates" not in turn else self._reply(turn, wire)
        if wire.get("output_config"):
            self._check_structured(reply, wire["output_config"]["format"]["schema"])
        reply.setdefault("model", model or wire.get("model"))
        if wire.get("stream"):
            resp = Response(200, paced(message_events(reply), self.pace, self.streams),
                            {"Content-Type": "text/event-stream"})
        else:
            resp = json_response(reply)
        resp.delay_s = self.latency_s
        return resp

    def _count_tokens(self, req: Request) -> Response:
        """Messages count_tokens: the fields it takes only (max_tokens is refused), the same message checks as
        create, and the input tokens of tools, system and messages by the fakes' tokenizer."""
        wire = req.json() or {}
        self.count_calls.append(wire)
        vertex = {"anthropic_version"} if "/projects/" in req.path else set()  # Vertex AI's body names its version
        extra = sorted(set(wire) - _COUNT_FIELDS - vertex)
        missing = [k for k in ("model", "messages") if not wire.get(k)]
        refusal = (f"{extra[0]}: Extra inputs are not permitted" if extra else
                   f"{missing[0]}: Field required" if missing else anthropic_error(wire["messages"]))
        if refusal:
            return json_response(self.error_body(400, refusal), 400)
        texts = [json.dumps(b) if b.get("type") != "text" else b["text"] for b in _blocks_in_order(wire)]
        return json_response({"input_tokens": sum(count_text_tokens(t) for t in texts)})

    def _output_config_refusal(self, model: str | None, config: Any) -> str | None:
        if config is None:
            return None
        if model in self.refuses_output_config:  # what Claude on Vertex AI answers where it is not enabled
            return "output_config: Extra inputs are not permitted"
        schema = (config.get("format") or {}).get("schema") if isinstance(config, dict) else None
        if not isinstance(schema, dict):
            return "output_config.format.schema: Field required"
        where = _open_objects(schema)
        return f"output_config.format.schema: additionalProperties must be false at {where[0]}" if where else None

    def _check_structured(self, reply: dict[str, Any], schema: dict[str, Any]) -> None:
        """A scripted answer that constrained decoding could not have produced is a broken test, not a reply."""
        text = "".join(b.get("text", "") for b in reply.get("content") or [] if b.get("type") == "text")
        try:
            jsonschema.validate(json.loads(text), schema)
        except (ValueError, jsonschema.ValidationError) as exc:
            message = f"scripted anthropic answer does not match the output schema: {str(exc)[:200]}"
            self.errors.append(message)
            raise HTTPError(500, message) from None

    def _reply(self, turn: dict[str, Any], wire: dict[str, Any]) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = []
        for index, part in enumerate(turn_parts(turn)):
            if "functionCall" in part:
                call = part["functionCall"]
                blocks.append({"type": "tool_use", "id": f"toolu_{self.served:03d}_{index}",
                               "name": call["name"], "input": call.get("args") or {}})
            elif part.get("text"):
                blocks.append({"type": "text", "text": part["text"]})
        cut = (turn.get("candidates") or [{}])[0].get("finishReason") == "MAX_TOKENS"
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "max_tokens" if cut else "end_turn"
        return {"id": f"msg_{self.served:04d}", "type": "message", "role": "assistant", "content": blocks,
                "stop_reason": stop, "stop_sequence": None, "usage": self._usage(turn, wire, blocks)}

    def _usage(self, turn: dict[str, Any], wire: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
        scripted = turn_usage(turn)
        marked = _blocks_in_order(wire)
        sequence = [{k: v for k, v in b.items() if k != "cache_control"} for b in marked]
        keys = _prefix_keys(sequence)
        read = written = 0
        breakpoints = [i for i, b in enumerate(marked) if "cache_control" in b]
        last_breakpoint = max(breakpoints, default=-1)
        hit = max((i for i, key in enumerate(keys) if key in self.cached_prefixes), default=-1)
        if hit >= 0:
            read = tokens(sequence[: hit + 1])
        if last_breakpoint >= 0:
            written = max(0, tokens(sequence[: last_breakpoint + 1]) - read)
            self.cached_prefixes.update(keys[i] for i in breakpoints)
        total = scripted["prompt"] if scripted else tokens(sequence)
        output = scripted["output"] if scripted else tokens(blocks)
        return {"input_tokens": max(0, total - read - written), "output_tokens": output,
                "cache_read_input_tokens": read, "cache_creation_input_tokens": written}


def _open_objects(schema: Any, at: str = "$") -> list[str]:
    """Where an object schema does not set `additionalProperties: false` (Claude requires it on every object)."""
    if isinstance(schema, list):
        return [p for i, s in enumerate(schema) for p in _open_objects(s, f"{at}[{i}]")]
    if not isinstance(schema, dict):
        return []
    kinds = schema.get("type")
    is_object = "properties" in schema or kinds == "object" or (isinstance(kinds, list) and "object" in kinds)
    found = [at] if is_object and schema.get("additionalProperties") is not False else []
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            found += [p for name, s in value.items() for p in _open_objects(s, f"{at}.{name}")]
        elif key in ("items", "anyOf", "allOf"):
            found += _open_objects(value, f"{at}.{key}")
    return found


def _blocks_in_order(wire: dict[str, Any]) -> list[dict[str, Any]]:
    """tools, then system, then messages' blocks: the order the API caches prefixes in."""
    sequence = [dict(t) for t in wire.get("tools") or []]
    system = wire.get("system") or []
    sequence += [{"type": "text", "text": system}] if isinstance(system, str) else [dict(b) for b in system]
    for message in wire.get("messages") or []:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        sequence += [{**b, "role": message["role"]} for b in blocks]
    return sequence


def _prefix_keys(sequence: list[dict[str, Any]]) -> list[str]:
    """A hash of every prefix (blocks 0..i)."""
    digest, keys = hashlib.sha256(), []
    for block in sequence:
        digest.update(json.dumps(block, sort_keys=True).encode())
        keys.append(digest.copy().hexdigest())
    return keys


def gemini_view(wire: dict[str, Any]) -> dict[str, Any]:
    """The request as Gemini-shaped contents: assistant -> model, tool_result blocks -> a `tool` message
    (split from any text of the same user turn), tool_choice -> toolConfig mode."""
    system = wire.get("system") or []
    text = system if isinstance(system, str) else "\n\n".join(b.get("text", "") for b in system)
    names: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    for message in wire.get("messages") or []:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if message["role"] == "assistant":
            parts = []
            for block in blocks:
                if block["type"] == "tool_use":
                    names[block["id"]] = block["name"]
                    parts.append({"functionCall": {"name": block["name"], "args": block["input"], "id": block["id"]}})
                elif block["type"] == "text":
                    parts.append({"text": block["text"]})
            contents.append({"role": "model", "parts": parts})
            continue
        results = [{"functionResponse": {"name": names.get(b["tool_use_id"], ""), "id": b["tool_use_id"],
                                         "response": parse_response(b.get("content"))}}
                   for b in blocks if b["type"] == "tool_result"]
        texts = [{"text": b["text"]} for b in blocks if b["type"] == "text"]
        contents += [{"role": "tool", "parts": results}] if results else []
        contents += [{"role": "user", "parts": texts}] if texts else []
    view: dict[str, Any] = {"contents": contents, "systemInstruction": {"parts": [{"text": text}]}}
    if wire.get("output_config"):  # structured output, in Gemini's terms
        view["generationConfig"] = {"responseMimeType": "application/json",
                                    "responseJsonSchema": wire["output_config"]["format"]["schema"]}
    if wire.get("temperature") is not None:
        view.setdefault("generationConfig", {})["temperature"] = wire["temperature"]
    if wire.get("tools"):
        mode = "NONE" if (wire.get("tool_choice") or {}).get("type") == "none" else "AUTO"
        view["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
        view["tools"] = [{"functionDeclarations": [{"name": t["name"]} for t in wire["tools"]]}]
    return view
