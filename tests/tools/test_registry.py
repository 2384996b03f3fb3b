"""ToolRegistry against a real sandbox: validation, error results, inline vs spilled output, streaming,
metadata merging and tool notes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.observability import Redactor
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools import OUT_DIR, Spiller, StreamingResponse, ToolDef, ToolRegistry, ToolResult
from tests.tools.conftest import read_file

pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]}


def lines(n: int) -> str:
    return "".join(f"log line {i}\n" for i in range(n))


def streamed(n: int, meta: dict[str, Any]) -> StreamingResponse:
    response = StreamingResponse(iter(()), suffix=".log", metadata=meta)

    def chunks() -> Iterator[bytes]:
        for i in range(n):
            yield f"chunk {i}\n".encode() * 100
        response.metadata["complete"] = True  # known only once the stream is exhausted

    return StreamingResponse(chunks(), suffix=".log", metadata=response.metadata)


def make_registry(sandbox: PodmanSandbox, **kwargs: Any) -> ToolRegistry:
    registry = ToolRegistry(Spiller(sandbox), **kwargs)
    tools = [
        ToolDef("text", "n log lines", SCHEMA, lambda n: lines(n)),
        ToolDef("json", "a JSON object", SCHEMA, lambda n: {"items": [{"id": i} for i in range(n)], "n": n}),
        ToolDef("stream", "streamed log", SCHEMA, lambda n: streamed(n, {})),
        ToolDef("blob", "binary", SCHEMA, lambda n: StreamingResponse([bytes(range(256)) * n], ".bin", binary=True)),
        ToolDef("boom", "raises", SCHEMA, _boom, notes="Raises on purpose."),
        ToolDef("async_echo", "async handler", SCHEMA, _async_echo),
    ]
    registry.register_data_source("demo", tools, "Demo source notes.", {"ui_base": "https://ui.example"})
    return registry


def _boom(n: int) -> str:
    raise RuntimeError(f"backend said no with token secret-token-123 (n={n})")


async def _async_echo(n: int) -> dict[str, int]:
    await asyncio.sleep(0)
    return {"echo": n}


async def test_small_output_is_inline_with_source_metadata(sandbox: PodmanSandbox) -> None:
    result = await make_registry(sandbox).execute("text", {"n": 3})
    assert result == ToolResult(True, lines(3), metadata={"ui_base": "https://ui.example"})
    assert result.to_response() == {"result": lines(3), "metadata": {"ui_base": "https://ui.example"}}
    assert (await make_registry(sandbox).execute("async_echo", {"n": 7})).content == {"echo": 7}


async def test_large_text_is_spilled_with_head_and_tail_preview(sandbox: PodmanSandbox) -> None:
    result = await make_registry(sandbox).execute("text", {"n": 5000})
    assert result.ok and result.spilled_path and result.spilled_path.startswith(OUT_DIR + "/text-")
    summary = result.content
    assert isinstance(summary, dict)
    assert summary["size_bytes"] == len(lines(5000)) and summary["lines"] == 5000
    assert summary["preview"].startswith("log line 0\n") and summary["preview"].rstrip().endswith("log line 4999")
    assert len(json.dumps(result.to_response())) < budgets.SPILL_THRESHOLD_BYTES
    assert (await read_file(sandbox, result.spilled_path)).decode() == lines(5000)


async def test_large_json_is_spilled_with_its_shape(sandbox: PodmanSandbox) -> None:
    result = await make_registry(sandbox).execute("json", {"n": 1000})
    assert result.spilled_path and result.spilled_path.endswith(".json")
    assert isinstance(result.content, dict) and result.content["format"] == "json"
    assert json.loads(result.content["preview"]) == {"items": ["array(1000) of", {"id": "number"}], "n": "number"}
    stored = json.loads(await read_file(sandbox, result.spilled_path))
    assert stored["n"] == 1000 and len(stored["items"]) == 1000


async def test_stream_is_spilled_and_its_late_metadata_merged(sandbox: PodmanSandbox) -> None:
    result = await make_registry(sandbox).execute("stream", {"n": 50})
    assert result.spilled_path and result.spilled_path.endswith(".log")
    assert result.metadata == {"ui_base": "https://ui.example", "complete": True}
    assert len(await read_file(sandbox, result.spilled_path)) == sum(len(f"chunk {i}\n") * 100 for i in range(50))


async def test_short_stream_comes_back_inline(sandbox: PodmanSandbox) -> None:
    result = await make_registry(sandbox).execute("stream", {"n": 1})
    assert result.spilled_path is None and result.content == "chunk 0\n" * 100


async def test_binary_stream_has_no_preview(sandbox: PodmanSandbox) -> None:
    result = await make_registry(sandbox).execute("blob", {"n": 100})
    assert isinstance(result.content, dict) and "preview" not in result.content
    assert result.content["size_bytes"] == 25_600 and result.content["format"] == "binary"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ("not an object", "arguments must be a JSON object, got str"),
        ({}, "'n' is a required property"),
        ({"n": -1}, "at n: -1 is less than the minimum of 0"),
        ({"n": "7"}, "at n: '7' is not of type 'integer'"),
    ],
)
async def test_malformed_arguments_are_an_error_result(sandbox: PodmanSandbox, args: Any, expected: str) -> None:
    result = await make_registry(sandbox).execute("text", args)
    assert not result.ok and result.error_kind == "bad_arguments"
    assert expected in str(result.content)


async def test_a_raising_tool_is_an_error_result_without_secrets(sandbox: PodmanSandbox) -> None:
    registry = make_registry(sandbox, redact=Redactor(["secret-token-123"]))
    result = await registry.execute("boom", {"n": 1})
    assert not result.ok and result.error_kind == "tool_error"
    assert result.content == "boom failed: RuntimeError: backend said no with token [redacted] (n=1)"


async def test_unknown_tool_lists_the_available_ones(sandbox: PodmanSandbox) -> None:
    result = await make_registry(sandbox).execute("nope", {})
    assert result.error_kind == "unknown_tool" and "text, json, stream" in str(result.content)


async def test_notes_and_declarations(sandbox: PodmanSandbox) -> None:
    registry = make_registry(sandbox)
    assert registry.notes() == "### demo\nDemo source notes.\n\n### boom\nRaises on purpose."
    assert [d.name for d in registry.declarations()][:2] == ["text", "json"]
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(ToolDef("text", "again", SCHEMA, lambda n: ""))
