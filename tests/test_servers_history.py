"""The fake model servers refuse the conversation histories the real APIs refuse, with the real error shape,
and each unmodified SDK raises its bad-request error for it; a valid tool round trip still passes."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from tests.servers import GeminiServer, text_turn
from tests.servers.anthropic import AnthropicServer
from tests.servers.model_history import OPENAI_TOOL_WITHOUT_CALL
from tests.servers.openai import OpenAIServer

USER = {"role": "user", "content": "why did the job fail?"}
OPENAI_CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "get_log", "arguments": "{}"}}]}


def openai_tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "{}"}


@pytest.mark.parametrize(("messages", "message", "param"), [
    ([USER, openai_tool("call_1")], OPENAI_TOOL_WITHOUT_CALL, "messages.[1].role"),
    ([USER, OPENAI_CALL, openai_tool("call_9")], "'tool_call_id' of 'call_9' not found", "messages.[2].tool_call_id"),
    ([USER, OPENAI_CALL, USER], "did not have response messages: call_1", "messages.[1].role"),
    ([USER, {"role": "assistant", "content": None}, USER], "expected a string, got null", "messages.[1].content"),
])
async def test_openai_refuses_tool_messages_that_answer_no_call(
        openai_server: OpenAIServer, messages: list[dict[str, Any]], message: str, param: str) -> None:
    openai_server.script(text_turn("never served"))
    async with openai.AsyncOpenAI(api_key="test-key", base_url=f"{openai_server.url}/v1", max_retries=0) as client:
        with pytest.raises(openai.BadRequestError) as refused:
            await client.chat.completions.create(model="gpt-test", messages=messages)  # type: ignore[arg-type]
    assert refused.value.status_code == 400
    body = refused.value.body
    assert isinstance(body, dict) and body["type"] == "invalid_request_error" and body["param"] == param
    assert message in body["message"] and body["code"] is None
    assert openai_server.served == 0
    openai_server.turns.clear()


def claude(server: AnthropicServer) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="test-key", base_url=server.url, max_retries=0)


def claude_use(ids: tuple[str, ...]) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": "get_log", "input": {}}
                                             for i in ids]}


def claude_result(ids: tuple[str, ...]) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": "{}"} for i in ids]}


@pytest.mark.parametrize(("messages", "message"), [
    ([claude_use(("toolu_1",)), claude_result(("toolu_1",))], 'first message must use the "user" role'),
    ([USER, claude_use(("toolu_1",)), claude_result(("toolu_2",))],
     "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_2"),
    ([USER, claude_use(("toolu_1", "toolu_2")), claude_result(("toolu_1",))],
     "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_2"),
    ([USER, claude_result(("toolu_1",))], "unexpected `tool_use_id` found in `tool_result` blocks: toolu_1"),
])
async def test_anthropic_refuses_tool_results_that_do_not_answer_the_previous_turn(
        anthropic_server: AnthropicServer, messages: list[dict[str, Any]], message: str) -> None:
    async with claude(anthropic_server) as client:
        with pytest.raises(anthropic.BadRequestError) as refused:
            await client.messages.create(model="claude-test", max_tokens=100, messages=messages)  # type: ignore[arg-type]
    body = refused.value.body
    assert isinstance(body, dict) and body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert message in body["error"]["message"]


async def test_anthropic_merges_consecutive_turns_as_the_api_does(anthropic_server: AnthropicServer) -> None:
    anthropic_server.script(text_turn("ok"))
    messages = [USER, USER, claude_use(("toolu_1",)), claude_result(("toolu_1",)), USER]
    async with claude(anthropic_server) as client:
        reply = await client.messages.create(model="claude-test", max_tokens=100, messages=messages)  # type: ignore[arg-type]
    assert reply.content[0].text == "ok"  # type: ignore[union-attr]


def gemini_call(*names: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part.from_function_call(name=n, args={}) for n in names])


def gemini_result(*names: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part.from_function_response(name=n, response={}) for n in names])


ASK = types.Content(role="user", parts=[types.Part(text="why?")])


@pytest.mark.parametrize(("contents", "message"), [
    ([ASK, gemini_result("get_log")], "function response turn comes immediately after a function call turn"),
    ([ASK, gemini_call("get_log", "get_env"), gemini_result("get_log")],
     "number of function response parts is equal to the number of function call parts"),
    ([gemini_call("get_log"), gemini_result("get_log")],
     "function call turn comes immediately after a user turn or after a function response turn"),
    ([ASK, types.Content(role="model", parts=[]), ASK], "contents[1].parts: contents.parts must not be empty"),
])
async def test_gemini_refuses_function_responses_that_answer_no_call(
        gemini_server: GeminiServer, contents: list[types.Content], message: str) -> None:
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=gemini_server.url))
    try:
        with pytest.raises(genai_errors.ClientError) as refused:
            await client.aio.models.generate_content(model="gemini-test", contents=contents)
    finally:
        await client.aio.aclose()
        client.close()
    assert (refused.value.code, refused.value.status) == (400, "INVALID_ARGUMENT")
    assert message in (refused.value.message or "")
    assert refused.value.details == {"error": {"code": 400, "message": refused.value.message,
                                               "status": "INVALID_ARGUMENT"}}


@pytest.mark.parametrize(("text", "message"), [("", "text content blocks must be non-empty"),
                                               ("\n ", "text content blocks must contain non-whitespace text")])
async def test_anthropic_refuses_empty_and_blank_text_blocks(
        anthropic_server: AnthropicServer, text: str, message: str) -> None:
    answered = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    async with claude(anthropic_server) as client:
        with pytest.raises(anthropic.BadRequestError) as refused:
            await client.messages.create(model="claude-test", max_tokens=100,
                                         messages=[USER, answered, USER])  # type: ignore[list-item]
    assert refused.value.body == {"type": "error", "error": {"type": "invalid_request_error",
                                                             "message": f"messages: {message}"}}
