"""The agent engine: the provider-blind loop, system-prompt layering and warnings, transcripts, and the
orchestration of one workflow run (used by the `run` command in cli/ and the worker)."""

from hummingbird_agent.agent.loop import AgentLoop, LoopResult, StepRecord
from hummingbird_agent.agent.prompts import Budget, SystemPrompt, WarningKind, choose_warning, render_prompt
from hummingbird_agent.agent.run import (
    RunDeps,
    RunOutcome,
    RunRequest,
    SourceRegistrar,
    final_note,
    load_workflow,
    run_workflow,
)
from hummingbird_agent.agent.transcript import render_transcript

__all__ = [
    "AgentLoop",
    "Budget",
    "LoopResult",
    "RunDeps",
    "RunOutcome",
    "RunRequest",
    "SourceRegistrar",
    "StepRecord",
    "SystemPrompt",
    "WarningKind",
    "choose_warning",
    "final_note",
    "load_workflow",
    "render_prompt",
    "render_transcript",
    "run_workflow",
]
