"""Chat Completions stream chunks (`stream: true`) gathered into one answer: content deltas joined, tool calls
assembled by `index` (id and name from their first delta, arguments concatenated), the finish reason and the
usage chunk (`stream_options.include_usage`) kept. Pure: reads the SDK's chunk objects by attribute only."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# Chat Completions' finish reasons in the ModelResponse vocabulary.
_FINISH = {"length": "max_tokens", "content_filter": "safety", "function_call": "tool_calls"}


@dataclass(slots=True)
class ChatStream:
    """The answer so far; `add(chunk)` returns the chunk's visible text."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish: str = ""
    usage: Any = None
    model: str = ""

    def add(self, chunk: Any) -> str:
        self.model = getattr(chunk, "model", "") or self.model
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        delta_text = ""
        for choice in getattr(chunk, "choices", None) or []:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta is not None and delta.content:
                delta_text += delta.content
            for call in (delta.tool_calls or []) if delta is not None else []:
                self._add_call(call)
            if choice.finish_reason:
                self.finish = _FINISH.get(choice.finish_reason, choice.finish_reason)
        if delta_text:
            self.text.append(delta_text)
        return delta_text

    def _add_call(self, delta: Any) -> None:
        index = delta.index if delta.index is not None else len(self.calls)
        call = self.calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
        call["id"] = call["id"] or delta.id
        function = delta.function
        if function is not None:
            call["name"] = call["name"] or (function.name or "")
            call["arguments"] += function.arguments or ""

    def parts(self) -> list[dict[str, Any]]:
        """The canonical parts: the text, then each call in index order."""
        parts: list[dict[str, Any]] = [{"text": "".join(self.text)}] if self.text else []
        for index in sorted(self.calls):
            call = self.calls[index]
            parts.append({"functionCall": {"name": call["name"], "args": arguments(call["arguments"]),
                                           "id": call["id"]}})
        return parts


def arguments(raw: str | None) -> Any:
    """The call's arguments; a non-JSON string is passed on as is and the tool registry refuses it."""
    try:
        return json.loads(raw or "{}")
    except json.JSONDecodeError:
        return raw
