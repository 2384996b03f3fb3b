"""Pure decisions of the phase-1 handlers: trigger rules, project allowlists, slash commands."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass

from hummingbird_agent.config.loading import Config, ProjectConfig, TriggerRule, TriggerRules, WorkflowConfig
from hummingbird_agent.gitlab.note_text import COMMAND

_COMMAND_RE = re.compile(r"^\s*" + re.escape(COMMAND) + r"(?:[ \t]+(?P<name>\S+))?(?P<rest>.*)$", re.S)


def _glob_rule(rule: TriggerRule, value: str) -> bool:
    if rule.include and not any(fnmatch.fnmatchcase(value, p) for p in rule.include):
        return False
    return not any(fnmatch.fnmatchcase(value, p) for p in rule.exclude)


def _regex_rule(rule: TriggerRule, value: str) -> bool:
    if rule.include and not any(re.search(p, value) for p in rule.include):
        return False
    return not any(re.search(p, value) for p in rule.exclude)


def rules_allow(
    rules: TriggerRules, *, user: str, branch: str, title: str, status: str | None = None
) -> tuple[bool, str]:
    """Whether an automatic event passes the rules, and which rule rejected it."""
    if status is not None and status not in rules.statuses:
        return False, f"status {status!r} not in {list(rules.statuses)}"
    if not _glob_rule(rules.users, user):
        return False, f"user {user!r} filtered"
    if not _glob_rule(rules.branches, branch):
        return False, f"branch {branch!r} filtered"
    if not _regex_rule(rules.title, title):
        return False, "title filtered"
    return True, ""


def project_settings(workflow: WorkflowConfig, project: str) -> ProjectConfig | None:
    """The workflow's settings for `project`, or None when the project is not on its allowlist."""
    return workflow.projects.get(project)


def enabled_for(config: Config, workflow: str, project: str) -> bool:
    """Whether `workflow` runs on `project`: the project is on its allowlist and its engine is running
    (the knowledge-base engines need `bamboo.enabled`)."""
    wf = config.workflows[workflow]
    return project_settings(wf, project) is not None and (wf.engine == "agent" or config.bamboo.enabled)


def engine_workflows(config: Config, engine: str) -> list[str]:
    """Names of the workflows that run on `engine`, in config order."""
    return [name for name, wf in config.workflows.items() if wf.engine == engine]


def auto_workflows(config: Config, trigger: str, project: str) -> list[tuple[str, ProjectConfig]]:
    """Workflows an automatic `trigger` event runs on `project`, with the project's settings."""
    found = []
    for name, wf in config.workflows.items():
        settings = project_settings(wf, project)
        if trigger in wf.triggers and settings is not None:
            found.append((name, settings))
    return found


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """`/hummingbird <name> [text]`; name is None for a bare command."""

    name: str | None
    text: str


def parse_command(note: str) -> SlashCommand | None:
    """The slash command at the start of a note, or None when the note is not one."""
    match = _COMMAND_RE.match(note or "")
    if not match:
        return None
    rest = match.group("rest")
    if rest and not rest[0].isspace():
        return None  # "/hummingbirdx" is not our command
    name = match.group("name")
    return SlashCommand(name=name.lower() if name else None, text=rest.strip())


@dataclass(frozen=True, slots=True)
class Resolution:
    """Outcome of resolving a command name: exactly one of workflow, or the candidates that matched."""

    workflow: str | None
    matches: tuple[str, ...] = ()


def resolve_workflow(name: str, workflows: Mapping[str, object]) -> Resolution:
    """Exact match first, then a unique prefix (seed §10.5)."""
    if name in workflows:
        return Resolution(workflow=name)
    matches = tuple(sorted(w for w in workflows if w.startswith(name)))
    if len(matches) == 1:
        return Resolution(workflow=matches[0])
    return Resolution(workflow=None, matches=matches)
