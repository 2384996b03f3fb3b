"""The contract every model adapter keeps, checked against each provider's fake through its real SDK:
canonical contents in and out, tools off on the final turn, empty responses, usage, typed errors with
Retry-After, a saved session replayed, and the knowledge base's JSON calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent.agent import AgentLoop, Budget, SystemPrompt
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import TransientError
from hummingbird_agent.models import ModelRequest, ToolDeclaration, tool_message, user_text
from hummingbird_agent.models.errors import (
    ModelAuthError,
    ModelBadRequest,
    ModelContextTooLong,
    ModelOverloaded,
    ModelRateLimited,
)
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.sandbox.lazy import LazySandbox
from hummingbird_agent.tools import Spiller, ToolRegistry
from tests.models.conftest import Provider, make_adapter
from tests.servers.anthropic import AnthropicServer
from tests.servers.gemini import empty_turn, function_call_turn, model_turn, text_turn, usage
from tests.servers.openai import OpenAIServer

TOOL = ToolDeclaration("sandbox_exec", "run", {"type": "object", "properties": {"command": {"type": "string"}}})
CONTEXT_V1 = Path(__file__).parent / "fixtures" / "context_v1.json"
TOO_LONG = {"gemini": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            "anthropic": "prompt is too long: 250000 tokens > 200000 maximum",
            "openai": "This model's maximum context length is 128000 tokens (context_length_exceeded)"}
OVERLOADED = {"gemini": 503, "anthropic": 529, "openai": 503}


def request(contents: list[dict], tools_enabled: bool = True, suffix: str = "") -> ModelRequest:
    return ModelRequest("test-model", "SYSTEM", contents, (TOOL,), tools_enabled, system_suffix=suffix)


async def test_tool_round_trip_keeps_call_ids(provider: Provider) -> None:
    provider.server.script(function_call_turn("sandbox_exec", {"command": "ls"}), text_turn("done"))
    history = [user_text("{}")]
    first = await provider.model.generate(request(history))
    [call] = first.calls
    assert (call.name, call.args, first.provider) == ("sandbox_exec", {"command": "ls"}, provider.name)
    assert first.content is not None and first.content["role"] == "model"
    history += [first.content, tool_message(first.calls, [{"result": "a.txt"}])]
    second = await provider.model.generate(request(json.loads(json.dumps(history))))  # as context.json keeps it
    assert second.text == "done" and second.calls == ()
    sent = provider.calls[1].body["contents"]
    assert [c["role"] for c in sent] == (["user", "model", "user"] if provider.name == "gemini"
                                         else ["user", "model", "tool"])
    [response] = sent[2]["parts"]
    assert response["functionResponse"]["response"] == {"result": "a.txt"}
    if provider.name != "gemini":  # Claude and OpenAI match results to calls by the provider's id
        assert call.call_id and response["functionResponse"]["id"] == call.call_id
        assert sent[1]["parts"][0]["functionCall"]["id"] == call.call_id


async def test_final_turn_turns_tools_off_and_warning_is_sent(provider: Provider) -> None:
    provider.server.script(text_turn("final"))
    response = await provider.model.generate(request([user_text("hi")], tools_enabled=False, suffix="## Final turn"))
    body = provider.calls[0].body
    assert body["toolConfig"]["functionCallingConfig"]["mode"] == "NONE"
    if provider.name == "anthropic":  # after the cached conversation, so warning turns keep the cache
        assert body["contents"][-1]["parts"][-1]["text"] == "## Final turn"
    else:
        assert body["systemInstruction"]["parts"][0]["text"].endswith("## Final turn")
    assert response.text == "final"


async def test_empty_response_is_empty(provider: Provider) -> None:
    provider.server.script(empty_turn())
    response = await provider.model.generate(request([user_text("hi")]))
    assert response.empty and response.content is None


async def test_usage_is_reported_uniformly(provider: Provider) -> None:
    provider.server.script(text_turn("ok", usage_metadata=usage(prompt=1200, candidates=30, cached=1000)))
    response = await provider.model.generate(request([user_text("hi")]))
    assert response.usage.output_tokens == 30
    if provider.name == "anthropic":  # Claude's cache is explicit: the fake computes it from breakpoints
        assert response.usage.prompt_tokens == 1200 and response.usage.cache_write_tokens > 0
    else:
        assert (response.usage.prompt_tokens, response.usage.cached_tokens) == (1200, 1000)


@pytest.mark.parametrize("kind", ["auth", "bad_request", "too_long", "overloaded"])
async def test_errors_are_typed(provider: Provider, kind: str) -> None:
    status, message, expected = {
        "auth": (401, "invalid key", ModelAuthError),
        "bad_request": (400, "tools[0].name: bad", ModelBadRequest),
        "too_long": (400, TOO_LONG[provider.name], ModelContextTooLong),
        "overloaded": (OVERLOADED[provider.name], "overloaded", ModelOverloaded),
    }[kind]
    provider.server.fail_next(5, status, body=provider.server.error_body(status, message))
    with pytest.raises(expected):
        await provider.model.generate(request([user_text("hi")]))
    retried = issubclass(expected, TransientError)
    assert len(provider.server.requests) == (3 if retried else 1)  # FAST_RETRY: 2 retries of transient errors


async def test_rate_limit_retry_after_is_honoured(provider: Provider) -> None:
    provider.server.fail_next(1, 429, body=provider.server.error_body(429, "slow down"), headers={"retry-after": "0"})
    provider.server.script(text_turn("after the wait"))
    assert (await provider.model.generate(request([user_text("hi")]))).text == "after the wait"
    provider.server.fail_next(1, 429, body=provider.server.error_body(429, "quota"), headers={"retry-after": "3600"})
    with pytest.raises(ModelRateLimited) as raised:
        await provider.model.generate(request([user_text("hi")]))
    assert raised.value.retry_after_s == 3600
    assert len(provider.server.requests) == 3  # a wait beyond the cap is not slept through: no retry


async def test_saved_session_in_todays_format_replays(provider: Provider) -> None:
    saved = json.loads(CONTEXT_V1.read_text())["contents"]
    provider.server.script(text_turn("The evidence says frob is missing."))
    response = await provider.model.generate(request([*saved, user_text("What did you find?")]))
    assert response.text == "The evidence says frob is missing."
    sent = provider.calls[0].body["contents"]
    texts = [p.get("text") for c in sent for p in c["parts"] if "text" in p]
    assert texts[-1] == "What did you find?" and saved[-1]["parts"][0]["text"] in texts
    results = [p["functionResponse"] for c in sent for p in c["parts"] if "functionResponse" in p]
    assert [r["response"] for r in results] == [{"result": {"title": "Add frob"}},
                                                {"result": {"exit_code": 0, "stdout": "", "stderr": ""}}]
    calls = [p["functionCall"] for c in sent for p in c["parts"] if "functionCall" in p]
    assert [c["name"] for c in calls] == ["gitlab_get_mr_details", "sandbox_exec"]
    if provider.name != "gemini":  # ids the Gemini session never had are given in order, results follow
        assert [c["id"] for c in calls] == [r["id"] for r in results]


async def test_thought_signatures_go_back_to_gemini_only(provider: Provider) -> None:
    saved = json.loads(CONTEXT_V1.read_text())["contents"]
    signature = saved[1]["parts"][0]["thoughtSignature"]
    kept = json.loads(json.dumps(saved))
    provider.server.script(text_turn("a"))
    await provider.model.generate(request([*saved, user_text("What did you find?")]))
    assert saved == kept  # the session keeps them for a later resume on Gemini
    call = provider.calls[0]
    wire = json.dumps(getattr(call, "wire", None) or call.body)
    if provider.name == "gemini":  # Gemini checks its own signatures on the function calls it made
        assert call.body["contents"][1]["parts"][0]["thoughtSignature"] == signature
    else:  # another provider's token means nothing there
        assert signature not in wire and "thoughtSignature" not in wire


async def test_knowledge_base_json_call(provider: Provider) -> None:
    schema = {"type": "object", "properties": {"cause": {"type": "string"}}, "required": ["cause"]}
    provider.server.script(text_turn('{"cause": "npm mirror down"}'), text_turn('{"cause": "again"}'))
    llm = JsonLLM(ModelText(provider.model, "test-model"))
    assert await llm.complete_json("Extract.", "log text", schema) == {"cause": "npm mirror down"}
    assert await llm.complete_json("Extract.", "log text") == {"cause": "again"}
    body = provider.calls[0].body
    assert "toolConfig" not in body or body["toolConfig"]["functionCallingConfig"]["mode"] == "NONE"
    assert body["generationConfig"]["temperature"] == 0  # the same names for the same incident
    assert body["generationConfig"]["responseMimeType"] == "application/json"
    if provider.name == "anthropic":  # structured output closes every object; the system text asks for JSON too
        assert body["generationConfig"]["responseJsonSchema"] == {**schema, "additionalProperties": False}
        assert "JSON object" in provider.calls[1].body["systemInstruction"]["parts"][0]["text"]
    else:
        assert body["generationConfig"]["responseJsonSchema"] == schema
    assert "responseJsonSchema" not in provider.calls[1].body["generationConfig"]


async def test_a_rule_answers_every_call_the_script_does_not_cover(provider: Provider) -> None:
    # How the knowledge-base tests answer: by prompt, in whatever order the calls come.
    provider.server.script(text_turn('{"n": 0}'))
    provider.server.respond_with(lambda system, user: json.dumps({"system": system[:7], "user": user}))
    llm = JsonLLM(ModelText(provider.model, "test-model"))
    assert await llm.complete_json("Extract.", "first") == {"n": 0}
    assert await llm.complete_json("Extract.", "second") == {"system": "Extract", "user": "second"}
    assert [user for _, user in provider.server.prompts] == ["first", "second"]


async def test_temperature_is_sent_only_when_asked(provider: Provider) -> None:
    provider.server.script(text_turn("a"), text_turn("b"))
    await provider.model.generate(ModelRequest("test-model", "SYSTEM", [user_text("hi")], temperature=0.3))
    await provider.model.generate(request([user_text("hi")]))
    asked, default = (c.body.get("generationConfig") or {} for c in provider.calls)
    assert asked["temperature"] == 0.3 and "temperature" not in default


@pytest.mark.parametrize("name", ["anthropic", "openai"])  # Gemini models all take one
async def test_a_model_that_refuses_a_temperature_is_asked_again_without_one(name: str) -> None:
    with {"anthropic": AnthropicServer, "openai": OpenAIServer}[name]() as server:
        server.refuses_temperature = frozenset({"new-model"})
        server.script(text_turn('{"cause": "a"}'), text_turn('{"cause": "b"}'), text_turn("c"))
        model = make_adapter(name, server.url)
        asked = ModelRequest("new-model", "Extract.", [user_text("log")], json_output=True, temperature=0.0)
        first, second = await model.generate(asked), await model.generate(asked)
        other = await model.generate(ModelRequest("old-model", "Extract.", [user_text("log")], temperature=0.0))
        await model.aclose()
    assert (first.text, second.text, other.text) == ('{"cause": "a"}', '{"cause": "b"}', "c")
    sent = [c.wire.get("temperature") for c in server.generate_calls]
    assert sent == [0.0, None, None, 0.0]  # refused once, then not sent to that model only


async def test_text_and_calls_in_one_turn(provider: Provider) -> None:
    part = {"functionCall": {"name": "sandbox_exec", "args": {"command": "pwd"}}}
    provider.server.script(model_turn({"text": "Let me look."}, part, dict(part)))
    response = await provider.model.generate(request([user_text("hi")]))
    assert response.text == "Let me look." and [c.name for c in response.calls] == ["sandbox_exec"] * 2
    ids = [c.call_id for c in response.calls]
    assert provider.name == "gemini" or len(set(ids)) == 2


async def test_the_loop_nudges_after_an_empty_turn_and_reports_who_answered(provider: Provider) -> None:
    provider.server.script(empty_turn(), text_turn("answer after the nudge"))
    registry = ToolRegistry(Spiller(LazySandbox(PodmanSandbox(SandboxConfig()))))  # never started: no tool call
    prompt = SystemPrompt("BASE", "", "# Workflow")
    result = await AgentLoop(provider.model, "test-model", registry, prompt, Budget(5)).run([user_text("{}")])
    assert (result.status, result.final_text) == ("completed", "answer after the nudge")
    assert result.provider == provider.name and result.model
    first, second = (json.dumps(c.body) for c in provider.calls)
    assert "Your last response was empty" in second and "Your last response was empty" not in first


CAP_FIELD = {"gemini": ("generationConfig", "maxOutputTokens"), "anthropic": ("max_tokens",),
             "openai": ("max_completion_tokens",)}


async def test_a_call_s_output_cap_reaches_the_wire(provider: Provider) -> None:
    provider.server.script(text_turn("short"))
    await provider.model.generate(ModelRequest("m", "s", [user_text("x")], max_output_tokens=300))
    sent = provider.calls[0].body if provider.name == "gemini" else provider.calls[0].wire
    for key in CAP_FIELD[provider.name]:
        sent = sent[key]
    assert sent == 300
