"""Tool calls a model wrote as JSON text instead of native calls (small local models: Qwen2.5-Coder on llama.cpp
answers `{"name": ..., "arguments": {...}}` as content). Pure: reads a reply's text against the declared tool
names and returns canonical functionCall parts, or nothing when the text is not a call."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection, Mapping
from typing import Any

from hummingbird_agent import budgets

# A fenced block (```json, ``` or ```tool_call) or Qwen's <tool_call> tags around one JSON value.
_BLOCK = re.compile(r"```(?:json|tool_call)?[ \t]*\n(?P<fenced>.*?)\n?```|<tool_call>(?P<tagged>.*?)</tool_call>",
                    re.DOTALL | re.IGNORECASE)
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "args", "parameters", "input", "tool_input")
_WRAPPER_KEYS = frozenset({"type", "id"})


def recover_calls(text: str, declared: Collection[str]) -> tuple[list[dict[str, Any]], str] | None:
    """(functionCall parts, the text left around them) when `text` is a tool call written as JSON: the whole
    reply, or fenced / tagged blocks in it. Only declared names, object arguments, bounded size; else None."""
    if not declared or not text.strip() or len(text) > budgets.TEXT_TOOL_CALL_MAX_CHARS:
        return None
    whole = _calls(_loads(text.strip()), declared)
    if whole:
        return whole, ""
    calls: list[dict[str, Any]] = []
    left = text
    for match in _BLOCK.finditer(text):
        found = _calls(_loads(match.group("fenced") or match.group("tagged") or ""), declared)
        if found:
            calls += found
            left = left.replace(match.group(0), "", 1)
    if not calls or len(calls) > budgets.TEXT_TOOL_CALLS_MAX:
        return None
    return calls, left.strip()


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _calls(value: Any, declared: Collection[str]) -> list[dict[str, Any]]:
    """The calls in one JSON value (an object or a list of objects); [] unless every item is a valid call."""
    items = value if isinstance(value, list) else [value]
    if not items or len(items) > budgets.TEXT_TOOL_CALLS_MAX:
        return []
    calls = [_call(item, declared) for item in items]
    return [{"functionCall": c} for c in calls if c is not None] if all(calls) else []


def _call(item: Any, declared: Collection[str]) -> dict[str, Any] | None:
    """A canonical functionCall (with a generated id) from the common shapes: {"name", "arguments"|"args"|
    "parameters"|...}, OpenAI's {"type": "function", "function": {...}}, {"tool", "tool_input"}."""
    if not isinstance(item, Mapping):
        return None
    if isinstance(item.get("function"), Mapping) and set(item) <= {"function", *_WRAPPER_KEYS}:
        item = item["function"]
    name_key = next((k for k in _NAME_KEYS if isinstance(item.get(k), str)), None)
    arg_keys = [k for k in _ARG_KEYS if k in item]
    if name_key is None or item[name_key] not in declared or len(arg_keys) > 1:
        return None
    if set(item) - {name_key, *arg_keys, *_WRAPPER_KEYS}:
        return None  # other keys: an answer that mentions a tool, not a call
    args = item[arg_keys[0]] if arg_keys else {}
    if isinstance(args, str):
        args = _loads(args)
    if not isinstance(args, dict):
        return None
    return {"name": item[name_key], "args": args, "id": f"call_text_{uuid.uuid4().hex[:16]}"}
