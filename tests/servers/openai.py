"""Scripted fake of an OpenAI-compatible server: Chat Completions and embeddings under any prefix (/v1,
Azure's /openai/v1, Ollama's /v1), and Ollama's native /api/ps and /api/show for the context window."""

from __future__ import annotations

import json
from typing import Any

from tests.servers.base import Request, Response, json_response
from tests.servers.gemini import DEFAULT_EMBEDDING_DIM, embed_text
from tests.servers.model_common import (
    ModelCall,
    ScriptedModelServer,
    paced,
    parse_response,
    tokens,
    turn_parts,
    turn_usage,
)
from tests.servers.model_history import openai_error
from tests.servers.model_streams import chat_chunks

_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}


class OpenAIServer(ScriptedModelServer):
    name = "openai"

    def __init__(self, *, context_window: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.context_window = context_window
        self.embedding_calls: list[dict[str, Any]] = []
        self.route("POST", r"(?:/[\w./-]*)?/chat/completions", self._chat)
        self.route("POST", r"(?:/[\w./-]*)?/embeddings", self._embeddings)
        self.route("GET", r"/api/ps", self._ps)
        self.route("POST", r"/api/show", self._show)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        code = "context_length_exceeded" if "context" in message else None
        return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "server_error"), "param": None,
                          "code": code}}

    def authorize(self, req: Request) -> Response | None:
        if self.api_key is None or req.path.startswith("/api/"):
            return None
        if req.header("Authorization") == f"Bearer {self.api_key}":
            return None
        return self.error(401, "Incorrect API key provided")

    def _chat(self, req: Request) -> Response:
        wire = req.json() or {}
        view = gemini_view(wire)
        self.generate_calls.append(ModelCall(wire.get("model", ""), view, wire))
        if wire.get("model") in self.refuses_temperature and wire.get("temperature", 1) != 1:  # all but the default
            message = (f"Unsupported value: 'temperature' does not support {wire['temperature']} with this model. "
                       "Only the default (1) value is supported.")
            return json_response({"error": {"message": message, "type": "invalid_request_error",
                                            "param": "temperature", "code": "unsupported_value"}}, 400)
        refused = openai_error(wire.get("messages") or [])
        if refused:
            return json_response({"error": {"message": refused[0], "type": "invalid_request_error",
                                            "param": refused[1], "code": None}}, 400)
        if "stream_options" in wire and not wire.get("stream"):
            return json_response({"error": {"message": "The 'stream_options' parameter is only allowed when 'stream' "
                                            "is enabled.", "type": "invalid_request_error",
                                            "param": "stream_options", "code": None}}, 400)
        turn = self.next_turn(view)
        reply = turn if "choices" in turn else self._reply(turn, wire)
        reply.setdefault("model", wire.get("model"))
        if wire.get("stream"):
            usage = bool((wire.get("stream_options") or {}).get("include_usage"))
            resp = Response(200, paced(chat_chunks(reply, usage), self.pace, self.streams),
                            {"Content-Type": "text/event-stream"})
        else:
            resp = json_response(reply)
        resp.delay_s = self.latency_s
        return resp

    def _reply(self, turn: dict[str, Any], wire: dict[str, Any]) -> dict[str, Any]:
        parts = turn_parts(turn)
        text = "".join(p.get("text", "") for p in parts if "text" in p)
        calls = [{"id": f"call_{self.served:03d}_{i}", "type": "function",
                  "function": {"name": p["functionCall"]["name"],
                               "arguments": json.dumps(p["functionCall"].get("args") or {})}}
                 for i, p in enumerate(parts) if "functionCall" in p]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        scripted = turn_usage(turn)
        prompt = scripted["prompt"] if scripted else tokens(wire.get("messages"))
        output = scripted["output"] if scripted else tokens(message)
        usage = {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}
        cut = (turn.get("candidates") or [{}])[0].get("finishReason") == "MAX_TOKENS"
        finish = "tool_calls" if calls else "length" if cut else "stop"
        if scripted and scripted["cached"]:
            usage["prompt_tokens_details"] = {"cached_tokens": scripted["cached"]}
        return {"id": f"chatcmpl-{self.served}", "object": "chat.completion", "created": 0,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage}

    def _embeddings(self, req: Request) -> Response:
        body = req.json() or {}
        self.embedding_calls.append(body)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dim = int(body.get("dimensions") or DEFAULT_EMBEDDING_DIM)
        data = [{"object": "embedding", "index": i, "embedding": embed_text(t, dim)} for i, t in enumerate(texts)]
        return json_response({"object": "list", "data": data, "model": body.get("model"),
                              "usage": {"prompt_tokens": tokens(texts), "total_tokens": tokens(texts)}})

    def _ps(self, req: Request) -> Response:
        if self.context_window is None:
            return self.error(404, "not found")
        return json_response({"models": [{"name": "llama3.1:8b", "model": "llama3.1:8b",
                                          "context_length": self.context_window}]})

    def _show(self, req: Request) -> Response:
        if self.context_window is None:
            return self.error(404, "not found")
        return json_response({"parameters": f"num_ctx {self.context_window}",
                              "model_info": {"llama.context_length": 131072}})


def gemini_view(wire: dict[str, Any]) -> dict[str, Any]:
    """The request as Gemini-shaped contents: consecutive `tool` messages -> one `tool` content,
    tool_choice -> toolConfig mode, response_format -> generationConfig."""
    names: dict[str, str] = {}
    contents: list[dict[str, Any]] = []
    system = ""
    for message in wire.get("messages") or []:
        role = message["role"]
        if role in ("system", "developer"):
            system += message["content"] if isinstance(message["content"], str) else ""
        elif role == "assistant":
            parts: list[dict[str, Any]] = [{"text": message["content"]}] if message.get("content") else []
            for call in message.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
                parts.append({"functionCall": {"name": call["function"]["name"], "id": call["id"],
                                               "args": parse_response(call["function"]["arguments"])}})
            contents.append({"role": "model", "parts": parts})
        elif role == "tool":
            part = {"functionResponse": {"name": names.get(message["tool_call_id"], ""), "id": message["tool_call_id"],
                                         "response": parse_response(message["content"])}}
            if contents and contents[-1]["role"] == "tool":
                contents[-1]["parts"].append(part)
            else:
                contents.append({"role": "tool", "parts": [part]})
        else:
            contents.append({"role": "user", "parts": [{"text": message["content"]}]})
    view: dict[str, Any] = {"contents": contents, "systemInstruction": {"parts": [{"text": system}]}}
    if wire.get("tools"):
        mode = "NONE" if wire.get("tool_choice") == "none" else "AUTO"
        view["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
        view["tools"] = [{"functionDeclarations": [{"name": t["function"]["name"]} for t in wire["tools"]]}]
    fmt = wire.get("response_format") or {}
    if fmt.get("type") in ("json_object", "json_schema"):
        view["generationConfig"] = {"responseMimeType": "application/json"}
        if fmt["type"] == "json_schema":
            view["generationConfig"]["responseJsonSchema"] = fmt["json_schema"]["schema"]
    if wire.get("temperature") is not None:
        view.setdefault("generationConfig", {})["temperature"] = wire["temperature"]
    return view
