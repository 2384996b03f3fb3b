"""Claude specifics against the fake Messages API: cache breakpoints (tools, stable system, last message;
the warning after them), cache read/creation accounting as the history grows, merged user turns."""

from __future__ import annotations

from hummingbird_agent.models import ModelRequest, ToolCall, ToolDeclaration, tool_message, user_text
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
