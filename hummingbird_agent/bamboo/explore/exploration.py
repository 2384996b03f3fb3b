"""What one exploration returns, and the parsing of the planner's two JSON answers (gaps, code)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hummingbird_agent.bamboo.diagnose.navigator import Exploration
from hummingbird_agent.bamboo.explore.orchestration import RunOutcome
from hummingbird_agent.bamboo.mcp import BUILTIN, McpTool
from hummingbird_agent.errors import PermanentError

log = logging.getLogger(__name__)
_CODE_KEYS = ("orchestration_code", "orchest_code", "code")


class ExplorationError(PermanentError):
    """The planner failed for real: neither runnable code nor any capability gap, or planning raised."""


@dataclass(frozen=True, slots=True)
class ExplorationResult(Exploration):
    """Seed fields: task_logs, external_data (`orchestration:<key>`, `tool:<name>`), tool_calls,
    capability_gaps; plus the code that ran (it becomes a Procedure once the incident is approved)."""

    task_logs: Mapping[str, str] = field(default_factory=dict)
    code: str = ""


def parse_gaps(answer: Mapping[str, Any]) -> list[str]:
    """Resolvable gap descriptions of the gap-analysis answer (anything malformed is dropped)."""
    raw = answer.get("gaps")
    gaps = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, Mapping) and item.get("resolvable", True) is not False and item.get("gap"):
            impact = f" (matters because: {item['impact']})" if item.get("impact") else ""
            gaps.append(f"{item['gap']}{impact}")
    return gaps


def parse_code(answer: Mapping[str, Any]) -> tuple[str, tuple[dict[str, str], ...]]:
    """(code, capability gaps) of the codegen answer; ExplorationError when it holds neither."""
    key = next((k for k in _CODE_KEYS if k in answer), _CODE_KEYS[0])
    if key != _CODE_KEYS[0]:
        log.warning("codegen answer used the key %r for orchestration_code", key)
    code = answer.get(key)
    code = code.strip() if isinstance(code, str) else ""
    raw = answer.get("capability_gaps")
    gaps = tuple({"investigation": str(g.get("investigation") or ""),
                  "suggested_tool_capability": str(g.get("suggested_tool_capability") or "")}
                 for g in (raw if isinstance(raw, list) else []) if isinstance(g, Mapping) and g.get("investigation"))
    if not code and not gaps:
        raise ExplorationError("the planner returned neither orchestration code nor capability gaps")
    return code, gaps


def result_of(outcome: RunOutcome, tools: Sequence[McpTool], gaps: Sequence[dict[str, str]], code: str,
              task_logs: Mapping[str, str]) -> ExplorationResult:
    """Returned values go under `orchestration:<key>` (text under a key naming a log also to task_logs);
    results of external-server tools under `tool:<name>`."""
    external: dict[str, Any] = {f"orchestration:{k}": v for k, v in outcome.value.items()}
    logs = dict(task_logs)
    logs.update({f"orchestration:{k}": v for k, v in outcome.value.items() if isinstance(v, str) and "log" in k})
    servers = {t.name: t.server for t in tools}
    for tool, value in outcome.results:
        if servers.get(tool, BUILTIN) not in (BUILTIN, "procedures"):
            external[f"tool:{tool}"] = value
    calls = tuple(f"{c.tool} {'ok' if c.ok else 'failed: ' + c.detail}" for c in outcome.calls)
    return ExplorationResult(external, tuple(gaps), calls, logs, code)
