"""Pure preview building for spilled output: head and tail for text, the shape for JSON, none for binary."""

from __future__ import annotations

import json
from typing import Any

from hummingbird_agent import budgets

HINT = "Full output is in the sandbox file; read it with sandbox_exec (jq, python3, yq, grep, head, tail)."


def text_preview(head: bytes, tail: bytes, size: int) -> str:
    """The first and last bytes of a text, cut at line boundaries, with the omitted byte count between."""
    head_text = head.decode("utf-8", errors="replace")
    if size <= len(head):
        return head_text
    cut = head_text.rfind("\n")
    if cut > 0:
        head_text = head_text[: cut + 1]
    tail_text = tail.decode("utf-8", errors="replace")
    nl = tail_text.find("\n")
    if 0 <= nl < len(tail_text) - 1:
        tail_text = tail_text[nl + 1 :]
    omitted = max(0, size - len(head_text.encode()) - len(tail_text.encode()))
    return f"{head_text}\n[... {omitted} bytes omitted ...]\n{tail_text}"


def cap_preview(text: str) -> str:
    """A source-supplied preview cut to the preview budget (its head and tail, at line boundaries)."""
    data = text.encode()
    if len(data) <= budgets.SPILL_PREVIEW_HEAD_BYTES + budgets.SPILL_PREVIEW_TAIL_BYTES:
        return text
    head, tail = data[: budgets.SPILL_PREVIEW_HEAD_BYTES], data[-budgets.SPILL_PREVIEW_TAIL_BYTES :]
    return text_preview(head, tail, len(data))


def json_shape(value: Any, depth: int = budgets.SPILL_SHAPE_MAX_DEPTH) -> Any:
    """The structure of a JSON value: keys, array lengths and leaf types, bounded in depth and width."""
    if isinstance(value, dict):
        if depth <= 0:
            return f"object({len(value)} keys)"
        keys = list(value)[: budgets.SPILL_SHAPE_MAX_KEYS]
        shape = {k: json_shape(value[k], depth - 1) for k in keys}
        if len(value) > len(keys):
            shape["..."] = f"{len(value) - len(keys)} more keys"
        return shape
    if isinstance(value, list):
        if not value or depth <= 0:
            return f"array({len(value)})"
        return [f"array({len(value)}) of", json_shape(value[0], depth - 1)]
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return f"string({len(value)})"
    return "null"


def shape_preview(value: Any) -> str:
    """A JSON shape that fits the preview budget; shallower until it does."""
    limit = budgets.SPILL_PREVIEW_HEAD_BYTES + budgets.SPILL_PREVIEW_TAIL_BYTES
    for depth in range(budgets.SPILL_SHAPE_MAX_DEPTH, -1, -1):
        text = json.dumps(json_shape(value, depth), separators=(",", ":"))
        if len(text) <= limit:
            return text
    return text[:limit]


def spill_summary(path: str, size: int, lines: int, preview: str | None, kind: str) -> dict[str, Any]:
    """What the model gets instead of a spilled output."""
    summary: dict[str, Any] = {"spilled_to": path, "size_bytes": size, "lines": lines, "format": kind}
    if preview is not None:
        summary["preview"] = preview
    summary["hint"] = HINT
    return summary
