"""Agent loop overhead and request growth, with a zero-latency scripted model.

Prints one JSON line: overhead_ms_per_iteration (loop + registry + prompt building per iteration, no
sandbox exec), request_bytes_1kb and request_bytes_100mb (bytes of the model request that carries a tool
result of that size; flat above the spill threshold because the body is spilled, not sent).
The sandbox is an in-memory stand-in that drains writes, so only the engine is measured.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterable, Iterator
from types import TracebackType
from typing import Any

from hummingbird_agent.agent import AgentLoop, Budget, SystemPrompt
from hummingbird_agent.agent.prompts import base_system_prompt
from hummingbird_agent.models import ScriptedModel, ScriptedTurn, user_text, wire_size_bytes
from hummingbird_agent.models.scripted import ScriptedCall
from hummingbird_agent.sandbox.base import ExecResult
from hummingbird_agent.tools import Spiller, StreamingResponse, ToolDef, ToolRegistry, register_sandbox_tools

ITERATIONS = 300
CHUNK = b"".join(b"2024-01-01T00:00:00Z build step %06d finished\n" % i for i in range(1400))[:65536]


class DrainSandbox:
    """Accepts writes and counts their bytes; commands succeed with no output."""

    def __init__(self) -> None:
        self.written = 0

    async def stream_exec(self, command: str, chunks: AsyncIterable[bytes], timeout_s: float = 0) -> ExecResult:
        async for chunk in chunks:
            self.written += len(chunk)
        return ExecResult(0, b"", b"")

    async def exec(self, command: str, timeout_s: float = 0) -> ExecResult:
        return ExecResult(0, b"", b"")

    async def __aenter__(self) -> DrainSandbox:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        return None


def output(size: int) -> StreamingResponse:
    def chunks() -> Iterator[bytes]:
        left = size
        while left > 0:
            yield CHUNK[: min(left, len(CHUNK))]
            left -= len(CHUNK)

    return StreamingResponse(chunks(), suffix=".log")


def registry() -> ToolRegistry:
    reg = ToolRegistry(Spiller(DrainSandbox()))  # type: ignore[arg-type]
    register_sandbox_tools(reg)
    schema = {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}
    reg.register_data_source("bench", [ToolDef("get_output", "n bytes of log", schema, output)], "Bench source.")
    return reg


def loop(model: ScriptedModel, reg: ToolRegistry, max_iterations: int) -> AgentLoop:
    prompt = SystemPrompt(base_system_prompt(), reg.notes(), "# Workflow\nAnalyse.")
    return AgentLoop(model, "bench", reg, prompt, Budget(max_iterations, 10**9))


async def overhead_ms() -> float:
    call = ScriptedTurn(calls=(ScriptedCall(name="get_output", args={"size": 200}),), prompt_tokens=1000)
    model = ScriptedModel([call] * (ITERATIONS - 1) + [ScriptedTurn(text="done", prompt_tokens=1000)])
    agent = loop(model, registry(), ITERATIONS + 1)
    started = time.perf_counter()
    result = await agent.run([user_text("{}")])
    elapsed = time.perf_counter() - started
    assert result.status == "completed" and len(result.steps) == ITERATIONS, result.reason
    return elapsed * 1000 / ITERATIONS


async def request_bytes(size: int) -> int:
    turns = [ScriptedTurn(calls=(ScriptedCall(name="get_output", args={"size": size}),)), ScriptedTurn(text="ok")]
    model = ScriptedModel(turns)
    result = await loop(model, registry(), 5).run([user_text("{}")])
    assert result.status == "completed", result.reason
    return wire_size_bytes(model.requests[1])


async def main() -> dict[str, Any]:
    return {
        "overhead_ms_per_iteration": round(await overhead_ms(), 3),
        "request_bytes_1kb": await request_bytes(1024),
        "request_bytes_100mb": await request_bytes(100 * 1024 * 1024),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
