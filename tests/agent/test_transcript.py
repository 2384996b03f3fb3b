"""transcript.md rendering: system prompt once, turns, calls, cut results, usage."""

from __future__ import annotations

from hummingbird_agent import budgets
from hummingbird_agent.agent import LoopResult, StepRecord, WarningKind, render_transcript
from hummingbird_agent.models import ToolCall, Usage, tool_message, user_text


def test_renders_every_message_and_cuts_long_results() -> None:
    call = ToolCall("sandbox_exec", {"command": "ls"})
    function_call = {"functionCall": {"name": "sandbox_exec", "args": {"command": "ls"}}}
    contents = [
        user_text('{"project": "g/p", "iid": 1}'),
        {"role": "model", "parts": [{"text": "Looking."}, function_call]},
        tool_message([call], [{"result": "x" * (budgets.TRANSCRIPT_RESULT_MAX_CHARS + 500)}]),
        {"role": "model", "parts": [{"text": "Final note."}]},
    ]
    steps = (
        StepRecord(1, None, ("sandbox_exec",), Usage(100, 10, 50), Usage(100, 10, 50)),
        StepRecord(2, WarningKind.FINAL_TURN, (), Usage(200, 20, 0), Usage(300, 30, 50)),
    )
    text = render_transcript("run", {"status": "completed"}, "THE SYSTEM PROMPT", LoopResult(
        "completed", "Final note.", contents, steps, Usage(300, 30, 50)))
    assert text.count("THE SYSTEM PROMPT") == 1
    assert '"iid": 1' in text and "**call** `sandbox_exec`" in text and "Final note." in text
    assert "... [" in text and "characters cut]" in text and "x" * (budgets.TRANSCRIPT_RESULT_MAX_CHARS + 1) not in text
    assert "| 2 | final_turn_warning |  | 200 | 20 | 0 |" in text
    assert "Total: 300 prompt, 30 output, 50 cached tokens over 2 calls." in text
