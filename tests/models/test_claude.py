"""Claude specifics against the fake Messages API: cache breakpoints (tools, stable system, last message;
the warning after them), cache read/creation accounting as the history grows, merged user turns, and a
response schema as structured output (Claude's schema subset, refusals answered prompt-only and remembered)."""

from __future__ import annotations

import json

import anthropic
import jsonschema
import pytest

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.strategies.causal import EXTRACT_SCHEMA
from hummingbird_agent.models import ModelRequest, ToolCall, ToolDeclaration, tool_message, user_text
from hummingbird_agent.models.claude import output_schema
from hummingbird_agent.models.errors import ModelBadRequest
from tests.models.conftest import make_adapter
from tests.servers.anthropic import AnthropicServer
from tests.servers.gemini import function_call_turn, text_turn

TOOLS = (ToolDeclaration("a", "first", {"type": "object"}), ToolDeclaration("b", "second", {"type": "object"}))
SYSTEM = "Stable system text. " * 200


def request(contents: list[dict], suffix: str = "") -> ModelRequest:
    return ModelRequest("claude-test", SYSTEM, contents, TOOLS, True, system_suffix=suffix)


async def test_breakpoints_and_cache_reads_as_history_grows(anthropic_server: AnthropicServer) -> None:
    model = make_adapter("anthropic", anthropic_server.url)
    anthropic_server.script(function_call_turn("a", {}), function_call_turn("b", {}), text_turn("done"))
    history = [user_text("{}")]
    usages = []
    for warning in ("", "", "## Final turn"):
        response = await model.generate(request(history, warning))
        usages.append(response.usage)
        if response.calls:
            history += [response.content, tool_message(response.calls, [{"result": "ok"}])]
    await model.aclose()
    wire = anthropic_server.generate_calls[2].wire
    assert [("cache_control" in t) for t in wire["tools"]] == [False, True]
    assert [("cache_control" in b) for b in wire["system"]] == [True]
    *_, cached, warning = wire["messages"][-1]["content"]  # the warning follows the last breakpoint
    assert "cache_control" in cached and warning == {"type": "text", "text": "## Final turn"}
    assert usages[0].cached_tokens == 0 and usages[0].cache_write_tokens > 0
    # Each later call reads the previous call's whole prefix, the warning turn included.
    assert usages[1].cached_tokens >= usages[0].cache_write_tokens
    assert usages[2].cached_tokens >= usages[1].cached_tokens + usages[1].cache_write_tokens
    assert all(u.prompt_tokens >= u.cached_tokens + u.cache_write_tokens for u in usages)


async def test_tool_results_and_a_reply_merge_into_one_user_turn(anthropic_server: AnthropicServer) -> None:
    model = make_adapter("anthropic", anthropic_server.url)
    anthropic_server.script(text_turn("ok"))
    calls = (ToolCall("a", {}, "toolu_1"), ToolCall("b", {}, "toolu_2"))
    model_turn = {"role": "model", "parts": [{"functionCall": {"name": c.name, "args": {}, "id": c.call_id}}
                                             for c in calls]}
    history = [user_text("{}"), model_turn, tool_message(calls, [{"result": 1}, {"error": "x"}]), user_text("more")]
    await model.generate(request(history))
    await model.aclose()
    messages = anthropic_server.generate_calls[0].wire["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    blocks = messages[2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert [b.get("tool_use_id") for b in blocks[:2]] == ["toolu_1", "toolu_2"]
    assert [b.get("is_error") for b in blocks[:2]] == [False, True]


SCHEMA = {"type": "object", "required": ["causes"], "properties": {
    "causes": {"type": "array", "minItems": 2, "items": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 80},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1, "description": "How sure."},
        "where": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"job": {"type": "string"}}}]},
        "note": {"type": ["object", "null"], "properties": {"text": {"type": "string", "format": "markdown"}}}}}}}}


def test_a_schema_is_put_in_claudes_subset_without_touching_the_original() -> None:
    kept = json.loads(json.dumps(SCHEMA))
    adapted = output_schema(SCHEMA)
    assert SCHEMA == kept  # the caller's schema, as other providers get it
    causes = adapted["properties"]["causes"]
    item = causes["items"]
    assert adapted["additionalProperties"] is False and item["additionalProperties"] is False
    assert item["properties"]["note"]["additionalProperties"] is False  # nullable object
    where = item["properties"]["where"]
    assert where["anyOf"][1]["additionalProperties"] is False and "oneOf" not in where
    assert "minItems" not in causes and causes["description"] == "{minItems: 2}"
    bounds = "How sure.\n\n{minimum: 0, maximum: 1}"
    assert item["properties"]["confidence"] == {"type": "number", "description": bounds}
    assert item["properties"]["name"] == {"type": "string", "description": "{maxLength: 80}"}
    assert item["properties"]["note"]["properties"]["text"] == {"type": "string", "description": "{format: markdown}"}
    assert output_schema({"type": "array", "minItems": 1, "items": {"type": "string", "format": "uuid"}}) == {
        "type": "array", "minItems": 1, "items": {"type": "string", "format": "uuid"}}


def json_request(model: str, schema: dict | None = SCHEMA, temperature: float | None = None) -> ModelRequest:
    return ModelRequest(model, "Extract.", [user_text("log")], json_output=True, response_schema=schema,
                        temperature=temperature)


ANSWER = '{"causes": [{"name": "mirror down", "confidence": 0.9}]}'


async def test_a_schema_goes_as_structured_output(anthropic_server: AnthropicServer) -> None:
    model = make_adapter("anthropic", anthropic_server.url)
    anthropic_server.script(text_turn(ANSWER))
    response = await model.generate(json_request("claude-test"))
    await model.aclose()
    assert response.text == ANSWER
    [call] = anthropic_server.generate_calls  # accepted: the fake refuses a schema with an open object
    assert call.wire["output_config"] == {"format": {"type": "json_schema", "schema": output_schema(SCHEMA)}}
    assert call.wire["system"][0]["text"].endswith("Answer with one JSON object only.")


async def test_json_without_a_schema_stays_prompt_only(anthropic_server: AnthropicServer) -> None:
    model = make_adapter("anthropic", anthropic_server.url)
    anthropic_server.script(text_turn('{"a": 1}'))
    await model.generate(json_request("claude-test", schema=None))
    await model.aclose()
    [call] = anthropic_server.generate_calls
    assert "output_config" not in call.wire and "JSON object" in call.wire["system"][0]["text"]


@pytest.mark.parametrize("refusal", ["model", "grammar"])
async def test_a_refused_schema_is_asked_once_more_without_it_and_remembered(
        anthropic_server: AnthropicServer, refusal: str) -> None:
    if refusal == "model":  # an older model, or Claude on Vertex AI where the organisation has not enabled it
        anthropic_server.refuses_output_config = frozenset({"old-claude"})
    else:  # a schema the API cannot compile
        message = "The compiled grammar is too large, which would cause performance issues."
        anthropic_server.fail_next(1, 400, body=anthropic_server.error_body(400, message))
    anthropic_server.script(text_turn(ANSWER), text_turn(ANSWER), text_turn(ANSWER))
    model = make_adapter("anthropic", anthropic_server.url)
    first, second = await model.generate(json_request("old-claude")), await model.generate(json_request("old-claude"))
    other = await model.generate(json_request("new-claude"))
    await model.aclose()
    assert first.text == second.text == other.text == ANSWER
    structured = ["output_config" in r.json() for r in anthropic_server.requests]
    assert structured == [True, False, False, True]  # refused once, then not sent to that model only
    assert all("JSON object" in json.dumps(r.json()["system"]) for r in anthropic_server.requests)


async def test_a_model_refusing_temperature_and_structured_output_gets_neither(
        anthropic_server: AnthropicServer) -> None:
    anthropic_server.refuses_temperature = frozenset({"old-claude"})
    anthropic_server.refuses_output_config = frozenset({"old-claude"})
    anthropic_server.script(text_turn(ANSWER), text_turn(ANSWER))
    model = make_adapter("anthropic", anthropic_server.url)
    for _ in range(2):
        assert (await model.generate(json_request("old-claude", temperature=0.0))).text == ANSWER
    await model.aclose()
    sent = [sorted({"temperature", "output_config"} & set(r.json())) for r in anthropic_server.requests]
    assert sent == [["output_config", "temperature"], ["output_config"], [], []]


async def test_another_bad_request_is_not_retried_without_the_schema(anthropic_server: AnthropicServer) -> None:
    anthropic_server.fail_next(1, 400, body=anthropic_server.error_body(400, "messages.0.content: Field required"))
    model = make_adapter("anthropic", anthropic_server.url)
    with pytest.raises(ModelBadRequest):
        await model.generate(json_request("claude-test"))
    await model.aclose()
    assert len(anthropic_server.requests) == 1


def test_the_extraction_schema_as_claude_gets_it_admits_every_field_the_extraction_reads() -> None:
    cause = "npm mirror down"
    answer = {  # the prompt's shape (extract_system.md) but for `parameters`, a free-form map
        "causes": [{"name": cause, "description": "d", "confidence": 0.9, "symptoms": ["s"], "features": ["f"]}],
        "resolutions": [{"name": "use the internal mirror", "description": "d", "steps": ["edit .npmrc"],
                         "cause": cause}],
        "procedures": [{"name": "read the job log", "description": "d", "tools": ["gitlab_get_job_log"],
                        "cause": cause, "depends_on": [{"name": "find the failed job", "reason": "its id"}]}],
        "components": [{"name": "npm", "system": "node", "version": "10", "cause": cause}],
        "environments": [{"name": "shared runner", "category": "runner", "cause": cause}],
        "context": [{"name": "mirror outage", "description": "a passage"}]}
    jsonschema.validate(answer, output_schema(EXTRACT_SCHEMA))


async def test_the_fake_holds_structured_output_to_what_the_api_allows(anthropic_server: AnthropicServer) -> None:
    client = anthropic.AsyncAnthropic(api_key="test-key", base_url=anthropic_server.url, max_retries=0)
    closed = {"type": "object", "properties": {"cause": {"type": "string"}}, "additionalProperties": False}
    ask = {"model": "claude-test", "max_tokens": 100, "messages": [{"role": "user", "content": "log"}]}
    with pytest.raises(anthropic.BadRequestError, match="additionalProperties"):
        await client.messages.create(**ask, output_config={"format": {"type": "json_schema", "schema": {
            "type": "object", "properties": {"cause": {"type": "string"}}}}})
    anthropic_server.script(text_turn('{"cause": 1}'))
    with pytest.raises(anthropic.InternalServerError):
        await client.messages.create(**ask, output_config={"format": {"type": "json_schema", "schema": closed}})
    await client.close()
    assert anthropic_server.errors and "does not match the output schema" in anthropic_server.errors[0]
    anthropic_server.errors.clear()  # reported, as a broken script fails its test


async def test_a_call_s_output_cap_is_sent_as_max_tokens_never_above_the_default(
        anthropic_server: AnthropicServer) -> None:
    model = make_adapter("anthropic", anthropic_server.url)
    anthropic_server.script(text_turn("short"), text_turn("long"), text_turn("default"))
    for cap in (300, 10 * budgets.MODEL_MAX_OUTPUT_TOKENS, None):
        await model.generate(ModelRequest("claude-test", "s", [user_text("x")], max_output_tokens=cap))
    await model.aclose()
    assert [c.wire["max_tokens"] for c in anthropic_server.generate_calls] == [
        300, budgets.MODEL_MAX_OUTPUT_TOKENS, budgets.MODEL_MAX_OUTPUT_TOKENS]


async def test_a_blank_text_part_of_a_saved_turn_is_not_sent(anthropic_server: AnthropicServer) -> None:
    # Gemini and OpenAI-compatible servers answer "\n" beside a call; Messages refuses a blank text block.
    model = make_adapter("anthropic", anthropic_server.url)
    anthropic_server.script(text_turn("done"))
    call = ToolCall("a", {}, "toolu_1")
    turn = {"role": "model", "parts": [{"text": "\n"}, {"functionCall": {"name": "a", "args": {}, "id": "toolu_1"}}]}
    await model.generate(request([user_text("{}"), turn, tool_message((call,), [{"result": 1}])]))
    await model.aclose()
    assert [b["type"] for b in anthropic_server.generate_calls[0].wire["messages"][1]["content"]] == ["tool_use"]
