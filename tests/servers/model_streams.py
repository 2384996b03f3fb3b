"""The streaming wire formats of the Anthropic and OpenAI fakes: a whole scripted answer cut into the events the
real API sends for it (Gemini's are in gemini.py), written by `model_common.paced`."""

from __future__ import annotations

import json
from typing import Any

from tests.servers.model_common import sse, text_pieces


def message_events(reply: dict[str, Any]) -> list[bytes]:
    """A Message as the Messages API streams it: message_start (input usage), a ping, each block opened, its text
    a few words a delta or its input JSON in two pieces, closed; message_delta (stop reason, output usage),
    message_stop."""
    usage = reply.get("usage") or {}
    start = {**{k: v for k, v in reply.items() if k not in ("content", "stop_reason", "stop_sequence")},
             "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}
    events = [sse({"type": "message_start", "message": start}, "message_start"), sse({"type": "ping"}, "ping")]
    for index, block in enumerate(reply.get("content") or []):
        if block["type"] == "text":
            opened, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": piece}
                                                             for piece in text_pieces(block["text"])]
        else:
            raw = json.dumps(block.get("input") or {})
            opened = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": piece}
                      for piece in (raw[:len(raw) // 2], raw[len(raw) // 2:]) if piece]
        events.append(sse({"type": "content_block_start", "index": index, "content_block": opened},
                          "content_block_start"))
        events += [sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
                   for delta in deltas]
        events.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    delta = {"stop_reason": reply.get("stop_reason"), "stop_sequence": reply.get("stop_sequence")}
    events.append(sse({"type": "message_delta", "delta": delta, "usage": usage}, "message_delta"))
    return [*events, sse({"type": "message_stop"}, "message_stop")]


def chat_chunks(reply: dict[str, Any], include_usage: bool) -> list[bytes]:
    """A chat.completion as Chat Completions streams it: a role chunk, content a few words a chunk, each tool call
    opened (id, name) then its arguments in two pieces, the finish chunk, the usage chunk when asked, [DONE]."""
    choice = reply["choices"][0]
    message = choice["message"]
    head = {"id": reply.get("id", "chatcmpl-stream"), "object": "chat.completion.chunk",
            "created": reply.get("created", 0), "model": reply.get("model"), "system_fingerprint": None}
    extra = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse({**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
                    **extra})

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": piece}) for piece in text_pieces(message.get("content") or "") if piece]
    for index, call in enumerate(message.get("tool_calls") or []):
        opened = {"index": index, "id": call["id"], "type": "function",
                  "function": {"name": call["function"]["name"], "arguments": ""}}
        events.append(chunk({"tool_calls": [opened]}))
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                   for piece in (arguments[:half], arguments[half:]) if piece]
    events.append(chunk({}, choice.get("finish_reason") or "stop"))
    if include_usage:
        events.append(sse({**head, "choices": [], "usage": reply.get("usage")}))
    return [*events, b"data: [DONE]\n\n"]
