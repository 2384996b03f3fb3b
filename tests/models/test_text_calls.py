"""Tool calls written as JSON text (Qwen2.5-Coder on llama.cpp answers them as content): read as calls by the
OpenAI-compatible adapter where configured, only for declared tools with object arguments, and sent back as
native tool_calls with their results matched by id; hosted endpoints keep the text."""

from __future__ import annotations

import json

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.models import ModelRequest, ToolDeclaration, tool_message, user_text
from hummingbird_agent.models.openai_compat import OpenAIModel, OpenAISettings
from hummingbird_agent.models.text_calls import recover_calls
from tests.servers.gemini import text_turn
from tests.servers.openai import OpenAIServer

DECLARED = {"get_job_log", "sandbox_exec"}
LOG_TOOL = ToolDeclaration("get_job_log", "a job's log", {"type": "object", "properties": {"job": {"type": "integer"}}})
# What Qwen2.5-Coder-0.5B-Instruct answered on llama.cpp when asked to analyse a pipeline with tools.
QWEN_REPLY = '```json\n{\n  "name": "get_job_log",\n  "arguments": {\n    "job": 7\n  }\n}\n```'


@pytest.mark.parametrize("text", [
    QWEN_REPLY,
    '{"name": "get_job_log", "arguments": {"job": 7}}',
    '{"name": "get_job_log", "parameters": {"job": 7}}',
    '{"type": "function", "function": {"name": "get_job_log", "arguments": "{\\"job\\": 7}"}}',
    '{"tool": "get_job_log", "tool_input": {"job": 7}}',
    '<tool_call>\n{"name": "get_job_log", "args": {"job": 7}}\n</tool_call>',
])
def test_the_common_shapes_are_read_as_one_call(text: str) -> None:
    recovered = recover_calls(text, DECLARED)
    assert recovered is not None
    [part], left = recovered
    call = part["functionCall"]
    assert (call["name"], call["args"], left) == ("get_job_log", {"job": 7}, "")
    assert call["id"].startswith("call_text_")


def test_prose_around_a_fenced_call_stays_as_text_and_a_list_is_several_calls() -> None:
    calls, left = recover_calls(f"I will read the log first.\n\n{QWEN_REPLY}", DECLARED) or ([], "")
    assert [c["functionCall"]["name"] for c in calls] == ["get_job_log"] and left == "I will read the log first."
    listed = json.dumps([{"name": "get_job_log", "arguments": {"job": 1}}, {"name": "sandbox_exec", "arguments": {}}])
    assert [c["functionCall"]["name"] for c in recover_calls(listed, DECLARED)[0]] == ["get_job_log", "sandbox_exec"]


@pytest.mark.parametrize("text", [
    '{"name": "delete_project", "arguments": {}}',  # not declared
    '{"name": "get_job_log", "arguments": [7]}',  # arguments not an object
    '{"name": "get_job_log", "arguments": "not json"}',
    '{"name": "get_job_log", "arguments": {"job": 7}, "cause": "a flaky test"}',  # an answer about a tool
    "The job failed: see get_job_log.",
    '```json\n{"cause": "network", "jobs": [7]}\n```',
    '{"name": "get_job_log", "arguments": {"job": "' + "x" * budgets.TEXT_TOOL_CALL_MAX_CHARS + '"}}',  # too long
    json.dumps([{"name": "sandbox_exec", "arguments": {}}] * (budgets.TEXT_TOOL_CALLS_MAX + 1)),
])
def test_anything_else_stays_text(text: str) -> None:
    assert recover_calls(text, DECLARED) is None


async def test_the_adapter_reads_a_text_call_and_sends_it_back_as_a_native_one() -> None:
    with OpenAIServer(api_key=None) as server:
        server.script(text_turn(QWEN_REPLY), text_turn("The job failed."), text_turn(QWEN_REPLY))
        model = OpenAIModel(OpenAISettings(base_url=f"{server.url}/v1", recover_text_tool_calls=True))
        hosted = OpenAIModel(OpenAISettings("test-key", f"{server.url}/v1"))
        history = [user_text("{}")]
        try:
            first = await model.generate(ModelRequest("m", "s", history, (LOG_TOOL,)))
            [call] = first.calls
            assert (call.name, call.args, first.text) == ("get_job_log", {"job": 7}, "")
            history += [first.content, tool_message(first.calls, [{"result": "error: exit 1"}])]
            second = await model.generate(ModelRequest("m", "s", json.loads(json.dumps(history)), (LOG_TOOL,)))
            kept = await hosted.generate(ModelRequest("m", "s", [user_text("{}")], (LOG_TOOL,)))
        finally:
            await model.aclose()
            await hosted.aclose()
    assert second.text == "The job failed."
    assistant, tool = server.generate_calls[1].wire["messages"][2:4]
    assert assistant["content"] is None and assistant["tool_calls"][0]["id"] == call.call_id
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"job": 7}
    assert tool == {"role": "tool", "tool_call_id": call.call_id, "content": '{"result": "error: exit 1"}'}
    assert kept.calls == () and kept.text == QWEN_REPLY  # off unless configured (hosted APIs)


async def test_no_call_is_read_when_tools_are_off_on_the_final_turn() -> None:
    with OpenAIServer(api_key=None) as server:
        server.script(text_turn(QWEN_REPLY))
        model = OpenAIModel(OpenAISettings(base_url=f"{server.url}/v1", recover_text_tool_calls=True))
        try:
            final = await model.generate(ModelRequest("m", "s", [user_text("{}")], (LOG_TOOL,), tools_enabled=False))
        finally:
            await model.aclose()
    assert final.calls == () and final.text == QWEN_REPLY
