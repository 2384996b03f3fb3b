"""The real loop with the real registry and a real sandbox, driven by ScriptedModel (or the scripted
Gemini server where a provider must misbehave)."""

from __future__ import annotations

from typing import Any

import pytest

from hummingbird_agent.agent import AgentLoop, Budget, SystemPrompt, WarningKind
from hummingbird_agent.models import GeminiModel, ScriptedModel, ScriptedTurn, user_text
from hummingbird_agent.models.gemini import GeminiSettings
from hummingbird_agent.models.retry import RetryPolicy
from hummingbird_agent.models.scripted import ScriptedCall
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools import Spiller, ToolRegistry, register_sandbox_tools
from tests.servers.gemini import GeminiServer, function_call_turn

pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]

PROMPT = SystemPrompt("BASE", "", "WORKFLOW")


def turn(text: str = "", *calls: tuple[str, Any], prompt_tokens: int | None = None) -> ScriptedTurn:
    return ScriptedTurn(text=text, calls=tuple(ScriptedCall(name=n, args=a) for n, a in calls),
                        prompt_tokens=prompt_tokens)


def make_loop(sandbox: PodmanSandbox, model: Any, max_iterations: int = 5, context: int = 100_000) -> AgentLoop:
    registry = ToolRegistry(Spiller(sandbox))
    register_sandbox_tools(registry)
    return AgentLoop(model, "m", registry, PROMPT, Budget(max_iterations, context))


async def test_all_calls_of_a_turn_run_and_return_in_one_tool_message(sandbox: PodmanSandbox) -> None:
    model = ScriptedModel([
        turn("", ("sandbox_exec", {"command": "echo one"}), ("sandbox_exec", {"command": "echo two >&2"})),
        turn("The answer."),
    ])
    result = await make_loop(sandbox, model).run([user_text("{}")])
    assert result.status == "completed" and result.final_text == "The answer."
    tool_msg = result.contents[2]
    assert tool_msg["role"] == "tool"
    responses = [p["functionResponse"]["response"]["result"] for p in tool_msg["parts"]]
    assert [r["stdout"] for r in responses] == ["one\n", ""] and responses[1]["stderr"] == "two\n"
    assert [c["role"] for c in result.contents] == ["user", "model", "tool", "model"]
    assert [s.tools for s in result.steps] == [("sandbox_exec", "sandbox_exec"), ()]


async def test_iteration_warning_then_final_turn_without_tools(sandbox: PodmanSandbox) -> None:
    calls = [turn("", ("sandbox_exec", {"command": f"echo {i}"})) for i in range(4)]
    model = ScriptedModel([*calls, turn("Wrapped up.")])
    result = await make_loop(sandbox, model, max_iterations=5).run([user_text("{}")])
    assert [s.warning for s in result.steps] == [None, None, None, WarningKind.ITERATION, WarningKind.FINAL_TURN]
    assert "## Budget warning" in model.requests[3].full_system and model.requests[3].tools_enabled
    assert "## Final turn" in model.requests[4].full_system and not model.requests[4].tools_enabled
    assert "## Budget warning" not in model.requests[4].full_system  # one suffix per call
    assert result.final_text == "Wrapped up."


async def test_empty_responses_are_nudged_a_bounded_number_of_times(sandbox: PodmanSandbox) -> None:
    model = ScriptedModel([turn(), turn(), turn(), turn("never reached")])
    result = await make_loop(sandbox, model).run([user_text("{}")])
    assert result.status == "no_answer" and result.reason == "the model returned empty responses"
    assert ["Your last response was empty" in r.full_system for r in model.requests] == [False, True, True]
    assert result.contents == [user_text("{}")]  # empty turns are not history


async def test_context_limit_forces_the_final_turn(sandbox: PodmanSandbox) -> None:
    model = ScriptedModel([
        turn("", ("sandbox_exec", {"command": "true"}), prompt_tokens=850),
        turn("", ("sandbox_exec", {"command": "true"}), prompt_tokens=1200),
        turn("Short answer.", ("sandbox_exec", {"command": "true"})),
    ])
    result = await make_loop(sandbox, model, max_iterations=10, context=1000).run([user_text("{}")])
    assert [s.warning for s in result.steps] == [None, WarningKind.CONTEXT, WarningKind.FINAL_TURN]
    assert result.final_text == "Short answer." and not model.requests[2].tools_enabled


async def test_malformed_arguments_become_an_error_result_and_the_loop_goes_on(sandbox: PodmanSandbox) -> None:
    model = ScriptedModel([turn("", ("sandbox_exec", "ls -l")), turn("", ("nope", {})), turn("Done.")])
    result = await make_loop(sandbox, model).run([user_text("{}")])
    errors = [result.contents[i]["parts"][0]["functionResponse"]["response"] for i in (2, 4)]
    assert errors[0]["error_kind"] == "bad_arguments" and "must be a JSON object" in errors[0]["error"]
    assert errors[1]["error_kind"] == "unknown_tool"
    assert result.status == "completed"


async def test_calls_despite_disabled_tools_are_answered_with_errors(
    sandbox: PodmanSandbox, gemini_server: GeminiServer
) -> None:
    gemini_server.script(function_call_turn("sandbox_exec", {"command": "id"}))  # ignores mode NONE
    model = GeminiModel(GeminiSettings("test-key", gemini_server.url), RetryPolicy(base_s=0.01))
    try:
        result = await make_loop(sandbox, model, max_iterations=1).run([user_text("{}")])
    finally:
        await model.aclose()
    assert result.status == "no_answer" and result.reason == "final turn"
    answer = result.contents[-1]["parts"][0]["functionResponse"]["response"]
    assert answer["error_kind"] == "tools_disabled"  # history stays valid for a resumption


async def test_a_failing_model_ends_the_run_with_a_failure_result(sandbox: PodmanSandbox) -> None:
    model = ScriptedModel([turn("", ("sandbox_exec", {"command": "true"}))])
    result = await make_loop(sandbox, model).run([user_text("{}")])
    assert result.status == "failed" and result.reason == "scripted model: no turns left (1 played)"
    assert len(result.contents) == 3 and len(result.steps) == 1
