"""Prompt tokens counted with the provider's counter where the SDK has one (google-genai count_tokens, anthropic
messages.count_tokens, direct and on Vertex AI), none for OpenAI-compatible servers (bytes / 4 stands); and the
explorer's tool block fitted with them: counted only when the prompt could be over the window, re-fitted until the
provider's count says it fits, where the bytes / 4 estimate alone would have been over."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import pytest

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.explore.enricher import ContextEnricher
from hummingbird_agent.bamboo.explore.prompt_fit import ToolBounds, fit_tool_block
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.bamboo.mcp import BuiltinMcpClient
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.config.schema import SandboxConfig
from hummingbird_agent.models import ModelRequest, user_text
from hummingbird_agent.models.claude import ClaudeModel, ClaudeSettings
from hummingbird_agent.models.gemini import GeminiModel
from hummingbird_agent.models.openai_compat import OpenAIModel, OpenAISettings
from hummingbird_agent.sandbox import SandboxFactory
from hummingbird_agent.tools import ToolDef
from tests.bamboo.test_tool_selection import catalogue
from tests.servers.anthropic import AnthropicServer
from tests.servers.gemini import GeminiServer, text_turn
from tests.servers.google_oauth import ACCESS_TOKEN, GoogleTokenServer
from tests.servers.model_common import count_text_tokens
from tests.servers.openai import OpenAIServer

SYSTEM = "You write Python orchestration code that calls the tools below."
USER = '{"job": "build", "error": "ETIMEDOUT"}'
PROMPT = ModelRequest("count-model", "System: be brief.", [user_text(USER)])


def user_with(block: str) -> str:
    return f"## Gaps\n- whether the npm registry timed out\n## Tools\n{block}"


def count_calls(server: GeminiServer) -> int:
    return sum(c.method == "countTokens" for c in server.calls)


async def test_gemini_counts_with_count_tokens(gemini_server: GeminiServer, gemini_model: GeminiModel) -> None:
    counted = await gemini_model.count_tokens(PROMPT)
    assert counted == count_text_tokens("System: be brief.") + count_text_tokens(USER)
    [call] = gemini_server.calls
    assert call.method == "countTokens" and call.model == "count-model"
    assert call.body["contents"][0]["parts"] == [{"text": "System: be brief."}]  # the system text, counted first


async def test_claude_counts_with_count_tokens(anthropic_server: AnthropicServer) -> None:
    model = ClaudeModel(ClaudeSettings("test-key", anthropic_server.url))
    try:
        counted = await model.count_tokens(PROMPT)
    finally:
        await model.aclose()
    [wire] = anthropic_server.count_calls
    assert set(wire) == {"model", "system", "messages"} and anthropic_server.generate_calls == []
    assert counted == count_text_tokens("System: be brief.") + count_text_tokens(USER)


async def test_claude_on_vertex_ai_counts_at_its_count_tokens_path(tmp_path: Path,
                                                                   anthropic_server: AnthropicServer) -> None:
    anthropic_server.bearer = ACCESS_TOKEN
    with GoogleTokenServer() as oauth:
        model = ClaudeModel(ClaudeSettings(base_url=anthropic_server.url, vertex_project="proj-2",
                                           vertex_region="us-east5",
                                           credentials_file=str(oauth.service_account_file(tmp_path))))
        try:
            assert await model.count_tokens(PROMPT) > 0
        finally:
            await model.aclose()
    assert anthropic_server.requests[0].path.endswith("/publishers/anthropic/models/count-tokens:rawPredict")


async def test_the_fake_refuses_what_count_tokens_refuses(anthropic_server: AnthropicServer) -> None:
    client = anthropic.AsyncAnthropic(api_key="test-key", base_url=anthropic_server.url, max_retries=0)
    try:
        with pytest.raises(anthropic.BadRequestError, match="max_tokens: Extra inputs are not permitted"):
            await client.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}],
                                               extra_body={"max_tokens": 10})
        with pytest.raises(anthropic.BadRequestError):  # an assistant turn first: refused as create refuses it
            await client.messages.count_tokens(model="m", messages=[{"role": "assistant", "content": "hi"}])
    finally:
        await client.close()


async def test_openai_compatible_has_no_counter_and_sends_nothing(openai_server: OpenAIServer) -> None:
    model = OpenAIModel(OpenAISettings("test-key", f"{openai_server.url}/v1"))
    try:
        assert await JsonLLM(ModelText(model, "gpt-test")).count_tokens(SYSTEM, "hello") is None
    finally:
        await model.aclose()
    assert openai_server.requests == []


async def test_a_prompt_that_surely_fits_is_not_counted(gemini_server: GeminiServer, llm: JsonLLM) -> None:
    fitted = await fit_tool_block(SYSTEM, user_with, catalogue(5), "npm", ToolBounds(), None, llm.count_tokens)
    assert fitted.omitted == () and fitted.counted_tokens is None and count_calls(gemini_server) == 0


async def test_the_block_fits_by_the_providers_count_where_bytes_over_4_would_not(
        gemini_server: GeminiServer, llm: JsonLLM) -> None:
    bounds = ToolBounds(window_tokens=6000, margin_tokens=500)
    tools = catalogue(300)
    estimated = await fit_tool_block(SYSTEM, user_with, tools, "npm", bounds, None, None)
    over = await llm.count_tokens(SYSTEM, estimated.user)
    assert over is not None and over > bounds.limit_tokens  # the estimate alone overfills the window
    before = count_calls(gemini_server)
    fitted = await fit_tool_block(SYSTEM, user_with, tools, "npm", bounds, None, llm.count_tokens)
    assert fitted.counted_tokens is not None and fitted.counted_tokens <= bounds.limit_tokens
    assert fitted.counted_tokens == await llm.count_tokens(SYSTEM, fitted.user)  # the count is of the sent prompt
    assert 1 <= count_calls(gemini_server) - before - 1 <= budgets.TOOL_COUNT_ROUNDS
    assert len(fitted.omitted) > len(estimated.omitted) and "- tool_000(" in fitted.user


async def test_a_failed_count_leaves_the_estimate(gemini_server: GeminiServer, llm: JsonLLM,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    gemini_server.fail_next(1, 503, path="countTokens")
    bounds = ToolBounds(window_tokens=6000, margin_tokens=500)
    fitted = await fit_tool_block(SYSTEM, user_with, catalogue(300), "npm", bounds, None, llm.count_tokens)
    estimated = await fit_tool_block(SYSTEM, user_with, catalogue(300), "npm", bounds, None, None)
    assert fitted.user == estimated.user and fitted.counted_tokens is None
    assert "token count unavailable; the bytes / 4 estimate stands" in caplog.text


async def test_the_explorers_code_prompt_fits_by_the_providers_count(gemini_server: GeminiServer,
                                                                     llm: JsonLLM) -> None:
    gap = {"investigation": "registry status", "suggested_tool_capability": "read the status page"}
    gemini_server.script(text_turn(json.dumps({"orchestration_code": "", "capability_gaps": [gap]})))
    tools = [ToolDef(t.name, t.description, t.parameters, lambda **_: {}) for t in catalogue(300)]
    # The sandbox factory is never opened: code generation answers with capability gaps only.
    enricher = ContextEnricher(llm, BuiltinMcpClient(tools), SandboxFactory(SandboxConfig()).new,
                               bounds=ToolBounds(window_tokens=6000, margin_tokens=500))
    result = await enricher.explore(IncidentInput("", {"job": "build"}), ["npm registry timeout"], "procedure")
    assert result.capability_gaps == (gap,)
    [(system, user)] = gemini_server.prompts
    assert count_calls(gemini_server) >= 1
    assert count_text_tokens(system) + count_text_tokens(user) <= 5500 and "- tool_000(" in user
