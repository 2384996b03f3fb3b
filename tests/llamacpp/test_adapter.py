"""The OpenAI-compatible adapter against llama.cpp's own server and a real small model: the output cap holds,
and a tool round trip works (the model's call read natively or from its JSON text, the result sent back with
its id, the next answer accepted); answers stream, a steady one is not cut on silence, a repeated line is stopped."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from hummingbird_agent.models import ModelRequest, ToolDeclaration, tool_message, user_text
from hummingbird_agent.models.openai_compat import OpenAIModel, OpenAISettings
from hummingbird_agent.models.stream import StreamLimits
from tests.servers.llamacpp import MODEL_NAME, LlamaCppServer

pytestmark = [pytest.mark.llamacpp, pytest.mark.timeout(600)]

LOG_TOOL = ToolDeclaration("get_job_log", "Read the log of a failed CI job by its numeric id.",
                           {"type": "object", "properties": {"job": {"type": "integer"}}, "required": ["job"]})
SYSTEM = "You analyse failed CI jobs. Always call get_job_log to read a job's log before you answer."
LOG = "$ make test\ncc -o app main.c\nmain.c:12: error: undefined reference to `frob`\nERROR: Job failed: exit code 1"


@pytest.fixture
async def model(llamacpp: LlamaCppServer) -> AsyncIterator[OpenAIModel]:
    # As config.yaml builds it for a self-hosted endpoint: max_tokens cap, text tool calls read.
    adapter = OpenAIModel(OpenAISettings(base_url=f"{llamacpp.url}/v1", max_output_tokens=128, self_hosted=True,
                                         recover_text_tool_calls=True))
    yield adapter
    await adapter.aclose()


async def test_the_output_cap_ends_a_runaway(llamacpp: LlamaCppServer) -> None:
    capped = OpenAIModel(OpenAISettings(base_url=f"{llamacpp.url}/v1", max_output_tokens=24, self_hosted=True))
    try:
        essay = await capped.generate(ModelRequest(MODEL_NAME, "You are a writer.",
                                                   [user_text("Write a 3000-word essay on compilers.")]))
    finally:
        await capped.aclose()
    assert 0 < essay.usage.candidate_tokens <= 24 and essay.text


async def test_a_tool_round_trip(model: OpenAIModel) -> None:
    task = user_text(json.dumps({"project": "group/project", "pipeline_id": 99, "failed_job": 502}))
    first = await model.generate(ModelRequest(MODEL_NAME, SYSTEM, [task], (LOG_TOOL,)))
    assert first.provider == "openai" and first.usage.candidate_tokens <= 128
    [call] = first.calls
    assert call.name == "get_job_log" and isinstance(call.args, dict) and call.call_id
    # With the pinned server and model (greedy), the call arrives as fenced JSON text, read by the adapter.
    assert call.call_id.startswith("call_text_")
    history = [task, first.content, tool_message(first.calls, [{"result": LOG}])]
    second = await model.generate(ModelRequest(MODEL_NAME, SYSTEM, json.loads(json.dumps(history)), (LOG_TOOL,),
                                               tools_enabled=False))
    assert second.calls == () and second.text.strip() and second.usage.candidate_tokens <= 128
    assert second.usage.prompt_tokens > first.usage.prompt_tokens  # the call and its result were read back


async def test_a_steady_stream_longer_than_the_silence_limit_is_not_cut(llamacpp: LlamaCppServer) -> None:
    # Five seconds of silence would cut it; ~96 tokens at a few tokens/s take longer than that in total.
    steady = OpenAIModel(OpenAISettings(base_url=f"{llamacpp.url}/v1", max_output_tokens=96, self_hosted=True),
                         limits=StreamLimits(first_event_s=300.0, silence_s=5.0))
    try:
        essay = await steady.generate(ModelRequest(MODEL_NAME, "You are a writer.",
                                                   [user_text("Write a 3000-word essay on compilers.")]))
    finally:
        await steady.aclose()
    assert essay.usage.candidate_tokens == 96 and essay.finish_reason == "max_tokens" and essay.text


async def test_a_model_repeating_a_line_is_stopped(llamacpp: LlamaCppServer) -> None:
    model = OpenAIModel(OpenAISettings(base_url=f"{llamacpp.url}/v1", max_output_tokens=400, self_hosted=True))
    try:
        answer = await model.generate(ModelRequest(MODEL_NAME, "You follow instructions exactly.", [user_text(
            "Print the line `ERROR: build failed` 60 times, one per line, and nothing else.")]))
    finally:
        await model.aclose()
    assert answer.finish_reason == "repetition"
    kept, notice = answer.text.split("\n\n[Hummingbird stopped this answer", 1)
    assert kept.count("ERROR: build failed") == 1 and "the same line 4 times in a row" in notice
