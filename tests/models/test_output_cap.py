"""The output cap per endpoint (`max_output_tokens`) from config.yaml to each provider's wire body, through the
real SDKs and the fake servers: 2048 `max_tokens` by default on a self-hosted OpenAI-compatible server, the
configured value everywhere, `max_completion_tokens` on hosted OpenAI (renamed when `max_tokens` is refused)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import load_config
from hummingbird_agent.config.model_targets import Connection, knowledge_target, workflow_target
from hummingbird_agent.config.providers import ModelConnection
from hummingbird_agent.models import ModelRequest, build_model, user_text
from hummingbird_agent.models.openai_compat import OpenAIModel, OpenAISettings
from tests.servers.anthropic import AnthropicServer
from tests.servers.base import Request, Response, json_response
from tests.servers.gemini import GeminiServer, text_turn
from tests.servers.openai import OpenAIServer


def loaded_with(tmp_path: Path, model: dict[str, Any], bamboo: dict[str, Any] | None = None) -> Any:
    (tmp_path / "prompt.md").write_text("# Workflow\n")
    flows = {"a": {"description": "d", "prompt": "prompt.md"},
             "b": {"description": "d", "prompt": "prompt.md", "model": {"name": "small", "max_output_tokens": 64,
                                                                    "recover_text_tool_calls": False}}}
    config: dict[str, Any] = {"model": model, "workflows": flows}
    if bamboo:
        config["bamboo"] = bamboo
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    return load_config(tmp_path / "config.yaml", {"KEY": "test-key"})


async def one_call(loaded: Any, name: str = "m") -> None:
    model = build_model(loaded)
    try:
        await model.generate(ModelRequest(name, "s", [user_text("x")]))
    finally:
        await model.aclose()


@pytest.mark.parametrize(("configured", "sent"), [(None, budgets.LOCAL_MODEL_MAX_OUTPUT_TOKENS), (300, 300)])
async def test_a_self_hosted_server_gets_max_tokens(tmp_path: Path, configured: int | None, sent: int) -> None:
    with OpenAIServer(api_key=None) as server:
        server.script(text_turn("ok"))
        model = {"provider": "openai", "base_url": f"{server.url}/v1", "name": "m"}
        await one_call(loaded_with(tmp_path, {**model, "max_output_tokens": configured} if configured else model))
    [call] = server.generate_calls
    assert call.wire["max_tokens"] == sent and "max_completion_tokens" not in call.wire


class RefusesMaxTokens(OpenAIServer):
    """A reasoning model behind a gateway: OpenAI's 400 for `max_tokens`, naming the parameter."""

    def _chat(self, req: Request) -> Response:
        if "max_tokens" in (req.json() or {}):
            self.generate_calls.append(req.json())
            message = "Unsupported parameter: 'max_tokens' is not supported with this model. Use " \
                      "'max_completion_tokens' instead."
            return json_response({"error": {"message": message, "type": "invalid_request_error",
                                            "param": "max_tokens", "code": "unsupported_parameter"}}, 400)
        return super()._chat(req)


async def test_hosted_openai_gets_max_completion_tokens_and_a_refused_max_tokens_is_renamed() -> None:
    with RefusesMaxTokens() as server:
        server.script(text_turn("a"), text_turn("b"), text_turn("c"))
        hosted = OpenAIModel(OpenAISettings("test-key", f"{server.url}/v1", max_output_tokens=500))
        gateway = OpenAIModel(OpenAISettings("test-key", f"{server.url}/v1", max_output_tokens=400, self_hosted=True))
        try:
            texts = [(await m.generate(ModelRequest("o-model", "s", [user_text("x")]))).text
                     for m in (hosted, gateway, gateway)]
        finally:
            await hosted.aclose()
            await gateway.aclose()
    assert texts == ["a", "b", "c"]
    sent = [c if isinstance(c, dict) else c.wire for c in server.generate_calls]
    assert [(w.get("max_tokens"), w.get("max_completion_tokens")) for w in sent] == [
        (None, 500), (400, None), (None, 400), (None, 400)]  # refused once, then the successor only


@pytest.mark.parametrize(("configured", "sent"), [(None, None), (1234, 1234)])
async def test_gemini_sends_the_cap_only_when_configured(tmp_path: Path, configured: int | None,
                                                         sent: int | None) -> None:
    with GeminiServer() as server:
        server.script(text_turn("ok"))
        model = {"provider": "gemini", "base_url": server.url, "api_key_env": "KEY", "name": "m"}
        await one_call(loaded_with(tmp_path, {**model, "max_output_tokens": configured} if configured else model))
    [call] = server.generate_calls
    assert (call.body.get("generationConfig") or {}).get("maxOutputTokens") == sent


@pytest.mark.parametrize(("configured", "sent"), [(None, budgets.MODEL_MAX_OUTPUT_TOKENS), (777, 777)])
async def test_claude_sends_8192_unless_configured(tmp_path: Path, configured: int | None, sent: int) -> None:
    with AnthropicServer() as server:
        server.script(text_turn("ok"))
        model = {"provider": "anthropic", "base_url": server.url, "api_key_env": "KEY", "name": "m"}
        await one_call(loaded_with(tmp_path, {**model, "max_output_tokens": configured} if configured else model))
    [call] = server.generate_calls
    assert call.wire["max_tokens"] == sent


@pytest.mark.parametrize(("base_url", "self_hosted"), [
    (None, False), ("https://api.openai.com/v1", False), ("https://team.openai.azure.com/openai/v1", False),
    ("http://127.0.0.1:8080/v1", True), ("https://llm.internal.example/v1", True)])
def test_which_openai_endpoints_are_self_hosted(base_url: str | None, self_hosted: bool) -> None:
    connection = Connection("openai", base_url=base_url)
    assert connection.self_hosted is self_hosted
    assert connection.output_cap == (budgets.LOCAL_MODEL_MAX_OUTPUT_TOKENS if self_hosted else None)
    assert connection.text_tool_calls is self_hosted
    assert Connection("openai", base_url=base_url, recover_text_tool_calls=not self_hosted).text_tool_calls \
        is not self_hosted


def test_a_workflow_and_the_knowledge_base_inherit_or_override_the_cap(tmp_path: Path) -> None:
    local = {"provider": "openai", "base_url": "http://127.0.0.1:1/v1", "max_output_tokens": 900}
    loaded = loaded_with(tmp_path, local, {"enabled": True, "max_output_tokens": 3000})
    assert workflow_target(loaded.config, "a").connection.output_cap == 900
    assert workflow_target(loaded.config, "b").connection.output_cap == 64
    assert workflow_target(loaded.config, "a").connection.text_tool_calls  # self-hosted: on unless turned off
    assert not workflow_target(loaded.config, "b").connection.text_tool_calls
    assert knowledge_target(loaded.config).connection.output_cap == 3000
    assert ModelConnection(max_output_tokens=5).max_output_tokens == 5
