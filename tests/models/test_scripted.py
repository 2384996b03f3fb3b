"""ScriptedModel: turns files, replay, tool calling switched off, running out of turns."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hummingbird_agent.errors import ConfigError, PermanentError
from hummingbird_agent.models import ModelRequest, ScriptedModel, ToolCall, user_text, wire_size_bytes

REQUEST = ModelRequest("m", "SYSTEM", [user_text("{}")])


async def test_replays_turns_from_a_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "turns.yaml"
    path.write_text("turns:\n  - calls: [{name: sandbox_exec, args: {command: ls}}]\n    prompt_tokens: 42\n"
                    "  - text: done\n")
    model = ScriptedModel.from_file(path)
    first = await model.generate(REQUEST)
    assert first.calls == (ToolCall("sandbox_exec", {"command": "ls"}),) and first.usage.prompt_tokens == 42
    second = await model.generate(REQUEST)
    assert second.text == "done" and second.usage.prompt_tokens == wire_size_bytes(REQUEST) // 4
    assert model.requests == [REQUEST, REQUEST]
    with pytest.raises(PermanentError, match="no turns left"):
        await model.generate(REQUEST)


async def test_calls_are_dropped_when_tools_are_disabled(tmp_path: Path) -> None:
    path = tmp_path / "turns.json"
    path.write_text('{"turns": [{"text": "final", "calls": [{"name": "x"}]}]}')
    response = await ScriptedModel.from_file(path).generate(
        ModelRequest("m", "S", [user_text("{}")], tools_enabled=False)
    )
    assert response.calls == () and response.text == "final"


@pytest.mark.parametrize(
    ("text", "message"),
    [("turns: [{txt: a}]", "turns.0.txt: Extra inputs are not permitted"), ("turns: [", "not valid YAML")],
)
def test_malformed_turns_files_are_config_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        ScriptedModel.from_file(path)


async def test_latency_applies_to_every_turn_and_turns_run_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "turns.yaml"
    path.write_text("latency_s: 1.0\nturns: [{text: a}, {text: b}, {text: c}]\n")
    model = ScriptedModel.from_file(path)
    loop = asyncio.get_running_loop()
    started = loop.time()
    answers = await asyncio.gather(*(model.generate(REQUEST) for _ in range(3)))
    elapsed = loop.time() - started
    assert sorted(a.text for a in answers) == ["a", "b", "c"]
    assert 1.0 <= elapsed < 2.5  # each turn waits its latency; concurrent turns overlap (sequential: 3 s)


async def test_per_conversation_scripts_replay_for_every_run(tmp_path: Path) -> None:
    path = tmp_path / "turns.yaml"
    path.write_text("per_conversation: true\nturns: [{calls: [{name: x}]}, {text: done}]\n")
    model = ScriptedModel.from_file(path)
    first_turns = [await model.generate(REQUEST) for _ in range(3)]  # three runs, each at its first turn
    assert all(t.calls == (ToolCall("x", {}),) for t in first_turns)
    later = ModelRequest("m", "S", [user_text("{}"), first_turns[0].content or {}, user_text("result")])
    assert (await model.generate(later)).text == "done"
