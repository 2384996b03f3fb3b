"""The conversation-history rules the real model APIs enforce, for the fakes to enforce too: a tool result
must answer a call of the turn right before it, (OpenAI, Anthropic) every call must be answered, and
(Anthropic) no text block is empty or whitespace only, (OpenAI, Gemini) no turn is empty. Each
function returns the real API's message (None when the history is valid); the fake wraps it in its 400 shape.
Messages are the real ones, so an adapter bug reads here as it would in production logs."""

from __future__ import annotations

from typing import Any

OPENAI_TOOL_WITHOUT_CALL = ("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                            "message with 'tool_calls'.")


def openai_error(messages: list[dict[str, Any]]) -> tuple[str, str] | None:
    """(message, param) of the first Chat Completions history error."""
    pending: list[str] = []  # ids of the last assistant turn's tool_calls not answered yet
    answering = False  # inside the run of tool messages right after an assistant turn with tool_calls
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not answering:
                return OPENAI_TOOL_WITHOUT_CALL, f"messages.[{index}].role"
            if call_id not in pending:
                return (f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in 'tool_calls' of previous "
                        "message.", f"messages.[{index}].tool_call_id")
            pending.remove(call_id)
            continue
        if pending:
            return _unanswered(index - 1, pending)
        if role == "assistant" and message.get("content") is None and not message.get("tool_calls"):
            return "Invalid value for 'content': expected a string, got null.", f"messages.[{index}].content"
        answering = role == "assistant" and bool(message.get("tool_calls"))
        pending = [c.get("id") for c in message.get("tool_calls") or []] if answering else []
    return _unanswered(len(messages) - 1, pending) if pending else None


def _unanswered(index: int, ids: list[str]) -> tuple[str, str]:
    return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(ids)}",
            f"messages.[{index}].role")


def anthropic_error(messages: list[dict[str, Any]]) -> str | None:
    """The first Messages API history error. Consecutive same-role turns are merged first, as the API does."""
    if not messages:
        return "messages: at least one message is required"
    turns = _merged(messages)
    texts = [b.get("text") for t in turns for b in t["blocks"] if b.get("type") == "text"]
    if any(not isinstance(t, str) or not t for t in texts):
        return "messages: text content blocks must be non-empty"
    if any(not t.strip() for t in texts):
        return "messages: text content blocks must contain non-whitespace text"
    if turns[0]["role"] != "user":
        return 'messages: first message must use the "user" role'
    asked: set[str] = set()  # tool_use ids of the assistant turn before this one
    for index, turn in enumerate(turns):
        if turn["role"] == "assistant":
            if asked:
                return _tool_use_unanswered(index - 1, asked)
            asked = {b["id"] for b in turn["blocks"] if b.get("type") == "tool_use"}
            continue
        for number, block in enumerate(turn["blocks"]):
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in asked:
                return (f"messages.{index}.content.{number}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                        "block in the previous message.")
        asked -= {b.get("tool_use_id") for b in turn["blocks"] if b.get("type") == "tool_result"}
        if asked:
            return _tool_use_unanswered(index - 1, asked)
    return _tool_use_unanswered(len(turns) - 1, asked) if asked else None


def _merged(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        if turns and turns[-1]["role"] == message.get("role"):
            turns[-1]["blocks"] += blocks
        else:
            turns.append({"role": message.get("role"), "blocks": blocks})
    return turns


def _tool_use_unanswered(index: int, ids: set[str]) -> str:
    return (f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{', '.join(sorted(ids))}. Each `tool_use` block must have a corresponding `tool_result` block in the "
            "next message.")


def gemini_error(contents: list[dict[str, Any]]) -> str | None:
    """The first generateContent history error (roles user/model; function responses answer the turn before)."""
    previous: dict[str, Any] | None = None
    for index, content in enumerate(contents):
        if content.get("role", "user") not in ("user", "model"):
            return "Please use a valid role: user, model."
        parts = content.get("parts") or []
        if not parts:
            return f"* GenerateContentRequest.contents[{index}].parts: contents.parts must not be empty.\n"
        responses = sum(1 for p in parts if "functionResponse" in p)
        calls_before = sum(1 for p in (previous or {}).get("parts") or [] if "functionCall" in p)
        if responses and (previous is None or previous.get("role") != "model" or not calls_before):
            return "Please ensure that function response turn comes immediately after a function call turn."
        if responses and responses != calls_before:
            return ("Please ensure that the number of function response parts is equal to the number of function "
                    "call parts of the function call turn.")
        if any("functionCall" in p for p in parts) and (previous is None or previous.get("role") == "model"):
            return ("Please ensure that function call turn comes immediately after a user turn or after a function "
                    "response turn.")
        previous = content
    return None
