"""What a run looked at, for the note's audit trail (pure): one record per tool call with its key arguments
(credentials and URL secrets left out), result size, spill, error, and the data gaps it revealed."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.models.base import ToolCall
from hummingbird_agent.tools.base import ToolResult

# Argument names whose values are never shown, whatever they hold.
_SECRET_NAME = re.compile(r"token|secret|passw|auth|cookie|credential|api[_-]?key|private", re.IGNORECASE)
# Error kinds that mean data the run wanted was not there (a gap), as opposed to a model mistake.
# A URL: scheme, optional user info, host and path, optional query/fragment.
_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?:[^\s/@]*@)?(?P<rest>[^\s?#]*)(?:[?#]\S*)?")
GAP_ERROR_KINDS = frozenset({"not_found", "unavailable", "forbidden_url", "gitlab_error", "tool_error", "timeout",
                             "no_access"})
# Kinds whose message is the same whichever tool met it (a credential that cannot read a project): their gap
# line names no tool, so the note states it once however many calls met it.
_TOOL_BLIND_KINDS = frozenset({"no_access"})


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One tool call as the note shows it."""

    tool: str
    arguments: tuple[tuple[str, str], ...]
    result_bytes: int
    spilled: bool
    error_kind: str | None = None
    error: str = ""
    gaps: tuple[str, ...] = ()


def record_call(call: ToolCall, result: ToolResult) -> CallRecord:
    """The audit record of one answered call."""
    error = "" if result.ok else short(str(result.content))
    return CallRecord(call.name, key_arguments(call.args), result_size(result), result.spilled_path is not None,
                      None if result.ok else result.error_kind, error, call_gaps(call.name, result))


def key_arguments(args: Any) -> tuple[tuple[str, str], ...]:
    """Scalar arguments in call order (one level of nesting as `outer.inner`), secret-named ones left out and
    URLs stripped of user info and query."""
    if not isinstance(args, Mapping):
        return ()
    shown: list[tuple[str, str]] = []
    for name, value in args.items():
        if _SECRET_NAME.search(str(name)):
            continue
        if isinstance(value, Mapping):
            shown += [(f"{name}.{inner}", text) for inner, text in key_arguments(
                {k: v for k, v in value.items() if not isinstance(v, Mapping)})]
        elif value is not None and not isinstance(value, list | tuple):
            shown.append((str(name), short(_safe_url(str(value)), budgets.AUDIT_ARG_MAX_CHARS)))
    return tuple(shown)


def result_size(result: ToolResult) -> int:
    """Bytes of the data behind the result: the spilled file's size, else the inline content."""
    content = result.content
    if result.spilled_path is not None and isinstance(content, Mapping) and isinstance(content.get("size_bytes"), int):
        return int(content["size_bytes"])
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
    return len(text.encode())


def call_gaps(tool: str, result: ToolResult) -> tuple[str, ...]:
    """Data the call could not get: a missing or refused resource, a cut output, gaps the source reported."""
    gaps: list[str] = []
    if not result.ok and result.error_kind in _TOOL_BLIND_KINDS:
        gaps.append(short(str(result.content)))
    elif not result.ok and result.error_kind in GAP_ERROR_KINDS:
        gaps.append(f"{tool}: {short(str(result.content))}")
    if result.truncated:
        gaps.append(f"{tool}: output was cut")
    reported = result.metadata.get("gaps") if isinstance(result.metadata, Mapping) else None
    if isinstance(reported, list):
        gaps += [f"{tool}: {short(str(gap))}" for gap in reported]
    return tuple(gaps)


def short(text: str, limit: int = budgets.AUDIT_TEXT_MAX_CHARS) -> str:
    """One line, at most `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _safe_url(value: str) -> str:
    """Text with every URL stripped of user info, query and fragment (where credentials hide)."""
    return _URL.sub(lambda m: m.group("scheme") + m.group("rest"), value)
