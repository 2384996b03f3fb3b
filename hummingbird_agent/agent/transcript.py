"""transcript.md: a human-readable rendering of a run (debugging and audit; never used to resume)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.agent.loop import LoopResult, StepRecord
from hummingbird_agent.models.base import Content


def render_transcript(title: str, facts: dict[str, Any], system_prompt: str, result: LoopResult) -> str:
    """The system prompt once, every message in order, tool results cut short, then token usage."""
    lines = [f"# {title}", ""]
    lines += [f"- **{key}**: {value}" for key, value in facts.items()]
    lines += ["", "## System prompt", "", _fence(system_prompt, "text"), "", "## Conversation", ""]
    for index, content in enumerate(result.contents, start=1):
        lines += _message(index, content)
    lines += _usage(result.steps)
    return "\n".join(lines) + "\n"


def _message(index: int, content: Content) -> list[str]:
    lines = [f"### {index}. {content.get('role', '?')}", ""]
    for part in content.get("parts") or []:
        if "text" in part and not part.get("thought"):
            lines += [_text(part["text"]), ""]
        elif "functionCall" in part:
            call = part["functionCall"]
            lines += [f"**call** `{call.get('name')}`", "", _fence(_json(call.get("args", {})), "json"), ""]
        elif "functionResponse" in part:
            resp = part["functionResponse"]
            body = _json(resp.get("response", {}))
            if len(body) > budgets.TRANSCRIPT_RESULT_MAX_CHARS:
                cut = len(body) - budgets.TRANSCRIPT_RESULT_MAX_CHARS
                body = f"{body[: budgets.TRANSCRIPT_RESULT_MAX_CHARS]}\n... [{cut} characters cut]"
            lines += [f"**result** `{resp.get('name')}`", "", _fence(body, "json"), ""]
    return lines


def _usage(steps: Sequence[StepRecord]) -> list[str]:
    header = "| iteration | warning | tools | prompt | output | cached |"
    lines = ["## Token usage", "", header, "|---|---|---|---|---|---|"]
    for s in steps:
        warning = s.warning.value if s.warning else ""
        u = s.usage
        lines.append(
            f"| {s.iteration} | {warning} | {', '.join(s.tools)} | {u.prompt_tokens} | {u.candidate_tokens} "
            f"| {u.cached_tokens} |"
        )
    total = steps[-1].total if steps else None
    if total is not None:
        lines += ["", f"Total: {total.prompt_tokens} prompt, {total.candidate_tokens} output, "
                      f"{total.cached_tokens} cached tokens over {len(steps)} calls."]  # fmt: skip
    return lines


def _text(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            return _fence(json.dumps(json.loads(stripped), indent=2), "json")
        except ValueError:
            return text
    return text


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _fence(text: str, lang: str) -> str:
    ticks = "````" if "```" in text else "```"
    return f"{ticks}{lang}\n{text}\n{ticks}"
