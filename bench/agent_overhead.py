"""Agent loop overhead and request growth, with a zero-latency scripted model and with each provider
adapter against its zero-latency fake server (the unmodified SDK over local HTTP).

Prints one JSON line: overhead_ms_per_iteration (loop + registry + prompt building per iteration, no
sandbox exec; the baseline), request_bytes_1kb and request_bytes_100mb (bytes of the model request that
carries a tool result of that size; flat above the spill threshold because the body is spilled, not sent),
and per provider overhead_ms_per_iteration_<provider> (the same loop through the adapter, the SDK and a
local HTTP round trip to the fake, which runs in this process and is counted too) and
cpu_ms_per_iteration_<provider> (the process CPU behind it, fake included: on a shared machine the wall
figure also holds time waiting for a core), request_bytes_1kb_<provider> / request_bytes_100mb_<provider>
(bytes of that request as the fake received it). The sandbox is an in-memory stand-in that drains writes,
so only the engine is measured.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hummingbird_agent.agent import AgentLoop, Budget, SystemPrompt  # noqa: E402
from hummingbird_agent.agent.prompts import base_system_prompt  # noqa: E402
from hummingbird_agent.models import Model, ModelRequest, ScriptedModel, ScriptedTurn, user_text, wire_size_bytes  # noqa: E402
from hummingbird_agent.models.claude import ClaudeModel, ClaudeSettings  # noqa: E402
from hummingbird_agent.models.gemini import GeminiModel, GeminiSettings  # noqa: E402
from hummingbird_agent.models.openai_compat import OpenAIModel, OpenAISettings  # noqa: E402
from hummingbird_agent.models.scripted import ScriptedCall  # noqa: E402
from hummingbird_agent.sandbox.base import ExecResult  # noqa: E402
from hummingbird_agent.tools import Spiller, StreamingResponse, ToolDef, ToolRegistry, register_sandbox_tools  # noqa: E402
from tests.servers.anthropic import AnthropicServer  # noqa: E402
from tests.servers.gemini import GeminiServer, function_call_turn, text_turn  # noqa: E402
from tests.servers.model_common import PROVIDERS, ScriptedModelServer  # noqa: E402
from tests.servers.openai import OpenAIServer  # noqa: E402

ITERATIONS = 300
# Provider runs last the default iteration budget: the history grows every iteration and is re-sent.
PROVIDER_ITERATIONS = 40
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


def loop(model: Model, reg: ToolRegistry, max_iterations: int) -> AgentLoop:
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


def adapter(provider: str, url: str) -> Model:
    if provider == "anthropic":
        return ClaudeModel(ClaudeSettings(api_key="test-key", base_url=url))
    if provider == "openai":
        return OpenAIModel(OpenAISettings(api_key="test-key", base_url=f"{url}/v1"))
    return GeminiModel(GeminiSettings(api_key="test-key", base_url=url))


def fake(provider: str) -> GeminiServer | ScriptedModelServer:
    return {"gemini": GeminiServer, "anthropic": AnthropicServer, "openai": OpenAIServer}[provider]()


async def provider_run(provider: str, sizes: list[int]) -> tuple[float, float, int]:
    """(wall ms and CPU ms per iteration, bytes of the last request) of a run whose tool calls ask for
    `sizes` bytes. CPU counts this process: the loop, the adapter, the SDK and the fake server."""
    with fake(provider) as server:
        server.script(text_turn("warm"), *[function_call_turn("get_output", {"size": size}) for size in sizes],
                      text_turn("done"))
        model = adapter(provider, server.url)
        # One call first: imports, TLS contexts and the connection are paid once per process, not per iteration.
        await model.generate(ModelRequest("bench", "warm-up", [user_text("{}")]))
        agent = loop(model, registry(), len(sizes) + 2)
        started, cpu = time.perf_counter(), time.process_time()
        result = await agent.run([user_text("{}")])
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        await model.aclose()
        assert result.status == "completed" and len(result.steps) == len(sizes) + 1, result.reason
        generate = [r for r in server.requests if r.method == "POST"]
        steps = len(result.steps)
        return elapsed * 1000 / steps, cpu * 1000 / steps, len(generate[-1].body)


async def provider_figures(provider: str) -> dict[str, Any]:
    overhead, cpu, _ = await provider_run(provider, [200] * (PROVIDER_ITERATIONS - 1))
    _, _, small = await provider_run(provider, [1024])
    _, _, large = await provider_run(provider, [100 * 1024 * 1024])
    return {f"overhead_ms_per_iteration_{provider}": round(overhead, 3),
            f"cpu_ms_per_iteration_{provider}": round(cpu, 3),
            f"request_bytes_1kb_{provider}": small, f"request_bytes_100mb_{provider}": large}


async def main() -> dict[str, Any]:
    figures = {
        "overhead_ms_per_iteration": round(await overhead_ms(), 3),
        "request_bytes_1kb": await request_bytes(1024),
        "request_bytes_100mb": await request_bytes(100 * 1024 * 1024),
        "provider_iterations": PROVIDER_ITERATIONS,
    }
    for provider in PROVIDERS:
        figures.update(await provider_figures(provider))
    return figures


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
