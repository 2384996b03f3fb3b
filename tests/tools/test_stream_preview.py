"""The spilled-stream preview seam: a StreamingResponse's own preview replaces head and tail (cut to the
preview budget, read only after the stream ends); an empty one keeps head and tail."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools import Spiller, StreamingResponse, ToolDef, ToolRegistry

pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
LINE = b"building step\n"


def response(text: str) -> StreamingResponse:
    seen: list[int] = []

    def chunks() -> Iterator[bytes]:
        for _ in range(1000):
            seen.append(1)
            yield LINE

    def preview() -> str:  # what the source saw by the time it is asked
        return text.replace("{seen}", str(len(seen)))

    return StreamingResponse(chunks(), suffix=".log", preview=preview)


def registry(sandbox: PodmanSandbox) -> ToolRegistry:
    reg = ToolRegistry(Spiller(sandbox))
    reg.register(ToolDef("log", "a log", SCHEMA, response))
    return reg


async def test_own_preview_replaces_head_and_tail_after_the_stream_ends(sandbox: PodmanSandbox) -> None:
    result = await registry(sandbox).execute("log", {"text": "812: error: boom (after {seen} chunks)"})
    assert result.spilled_path and result.content["preview"] == "812: error: boom (after 1000 chunks)"
    assert result.content["size_bytes"] == 1000 * len(LINE) and result.content["lines"] == 1000


async def test_long_own_preview_is_cut_to_the_budget(sandbox: PodmanSandbox) -> None:
    text = "\n".join(f"{n}: line {n} " + "x" * 60 for n in range(1, 400))
    preview = (await registry(sandbox).execute("log", {"text": text})).content["preview"]
    assert len(preview.encode()) <= budgets.SPILL_PREVIEW_HEAD_BYTES + budgets.SPILL_PREVIEW_TAIL_BYTES + 64
    assert preview.startswith("1: line 1 ") and preview.rstrip().endswith("399: line 399 " + "x" * 60)
    assert "bytes omitted" in preview


async def test_empty_own_preview_keeps_head_and_tail(sandbox: PodmanSandbox) -> None:
    preview = (await registry(sandbox).execute("log", {"text": ""})).content["preview"]
    assert preview.startswith("building step\n") and "bytes omitted" in preview
