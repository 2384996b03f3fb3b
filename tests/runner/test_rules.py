"""Trigger rules, allowlists and slash-command resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from hummingbird_agent.config.loading import TriggerRule, TriggerRules, load_config
from hummingbird_agent.runner.rules import (
    Resolution,
    SlashCommand,
    auto_workflows,
    parse_command,
    resolve_workflow,
    rules_allow,
)

REPO = Path(__file__).resolve().parents[2]
RULES = TriggerRules(
    statuses=("failed",),
    users=TriggerRule(exclude=("renovate*",)),
    branches=TriggerRule(include=("main", "release-*")),
    title=TriggerRule(exclude=(r"\[skip hummingbird\]",)),
)


@pytest.mark.parametrize(
    ("kwargs", "allowed"),
    [
        ({"user": "alice", "branch": "main", "title": "Fix", "status": "failed"}, True),
        ({"user": "alice", "branch": "release-1.2", "title": "Fix"}, True),
        ({"user": "alice", "branch": "main", "title": "Fix", "status": "success"}, False),
        ({"user": "renovate-bot", "branch": "main", "title": "Bump"}, False),
        ({"user": "alice", "branch": "feature", "title": "Fix"}, False),
        ({"user": "alice", "branch": "main", "title": "WIP [skip hummingbird]"}, False),
    ],
)
def test_rules(kwargs: dict[str, str], allowed: bool) -> None:
    ok, reason = rules_allow(RULES, **kwargs)
    assert ok is allowed
    assert (reason == "") is allowed


def test_auto_workflows_respect_trigger_and_allowlist() -> None:
    config = load_config(REPO / "config.yaml", environ={}).config
    assert [n for n, _ in auto_workflows(config, "pipeline", "example-group/example-project")] == ["analyze-failures"]
    assert [n for n, _ in auto_workflows(config, "merge_request", "example-group/example-project")] == ["review-mr"]
    assert auto_workflows(config, "pipeline", "someone/else") == []


@pytest.mark.parametrize(
    ("note", "expected"),
    [
        ("/hummingbird help", SlashCommand("help", "")),
        ("/hummingbird", SlashCommand(None, "")),
        ("  /hummingbird Analyze-Failures look\nat job 3", SlashCommand("analyze-failures", "look\nat job 3")),
        ("/hummingbirdx help", None),
        ("please run /hummingbird help", None),
        ("", None),
    ],
)
def test_parse_command(note: str, expected: SlashCommand | None) -> None:
    assert parse_command(note) == expected


def test_resolve_exact_then_unique_prefix() -> None:
    workflows = {"analyze-failures": 1, "analyze": 2, "review-mr": 3}
    assert resolve_workflow("analyze", workflows) == Resolution("analyze")
    assert resolve_workflow("rev", workflows) == Resolution("review-mr")
    assert resolve_workflow("ana", workflows) == Resolution(None, ("analyze", "analyze-failures"))
    assert resolve_workflow("zzz", workflows) == Resolution(None, ())
