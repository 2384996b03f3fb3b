"""`panda` strategy: PanDA JEDI task fields routed deterministically, the LLM for causes and fixes.

Routing (reference/bamboo-research §2.3): discrete fields, bucketed continuous fields, splitRule
sub-rules, parsed CLI arguments, pseudonymised identity fields, status and errorDialog as Symptoms.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import html
import logging
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import Edge, KnowledgeGraph, Node, NodeType, RelType, derive_id, make_node
from hummingbird_agent.bamboo.mcp import McpClient
from hummingbird_agent.bamboo.panda.navigator import PandaSourceNavigator
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps
from hummingbird_agent.bamboo.strategies.causal import clip, extract_causal
from hummingbird_agent.errors import AgentError
from hummingbird_agent.logs import signature

log = logging.getLogger(__name__)
DOMAIN = "PanDA/JEDI workload management: tasks split into jobs brokered to grid sites."
DISCRETE = ("prodSourceLabel", "vo", "coreCount", "taskType", "processingType", "taskPriority", "architecture",
            "transUses", "transHome", "transPath", "cpuTimeUnit", "ramUnit", "walltimeUnit", "outDiskUnit",
            "workDiskUnit", "reqID", "site", "campaign", "goal", "nucleus", "requestType", "gshare",
            "resource_type", "container_name", "framework")
IDENTITY = ("userName", "prodUserName", "prodUserID")
UNSTRUCTURED = ("taskName", "job_execution_params")
CLI_SKIP = frozenset({"outDS", "inDS", "minDS", "cavDS", "secondaryDSs", "extFile"})
CLI_CONTEXT = frozenset({"exec", "trf", "outputs", "extOutFile"})
_GB = 1024
# attribute -> ascending (upper bound, label) buckets; the last label is "above every bound".
_MEM = ((512, "<512MB"), (_GB, "512MB-1GB"), (2 * _GB, "1-2GB"), (3 * _GB, "2-3GB"), (4 * _GB, "3-4GB"),
        (6 * _GB, "4-6GB"), (8 * _GB, "6-8GB"), (12 * _GB, "8-12GB"), (16 * _GB, "12-16GB"), (32 * _GB, "16-32GB"),
        (None, ">32GB"))
_DISK = ((_GB, "<1GB"), (10 * _GB, "1-10GB"), (100 * _GB, "10-100GB"), (None, ">100GB"))
_TIME = ((3600, "<1h"), (6 * 3600, "1-6h"), (24 * 3600, "6-24h"), (None, ">24h"))
BUCKETS: dict[str, tuple[tuple[float | None, str], ...]] = {
    "ramCount": _MEM, "baseRamCount": _MEM, "outDiskCount": _DISK, "workDiskCount": _DISK,
    "diskIO": ((10, "<10"), (100, "10-100"), (None, ">100")),
    "walltime": _TIME, "baseWalltime": _TIME, "cpuTime": _TIME,
    "ioIntensity": ((100, "low"), (1000, "medium"), (None, "high")),
}
_TAGS = re.compile(r"<[^>]+>")
SOURCE_HINT = "source code analysis"  # the seed's hint key of the source navigator's answer


def bucket(attribute: str, value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        log.warning("panda field %s is not numeric; kept as is", attribute)
        return str(value)
    for bound, label in BUCKETS[attribute]:
        if bound is None or number < bound:
            return label
    return str(value)


def pseudonym(salt: bytes, field: str, value: str) -> str:
    prefix = re.sub(r"(Name|ID)$", "", field).lower()[:8]
    digest = hmac.new(salt, f"{field}:{value}".encode(), hashlib.sha256).hexdigest()[:8]
    return f"{prefix}-{digest}"


def cli_arguments(text: str) -> Iterator[tuple[str, str, bool]]:
    """(flag, value, is_context) from task_creation_arguments; the first positional is the tool."""
    try:
        tokens = shlex.split(text)
    except ValueError:
        tokens = text.split()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.startswith("-"):
            flag, _, value = token.lstrip("-").partition("=")
            if not value and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                value, i = tokens[i + 1], i + 1
            if flag and flag not in CLI_SKIP:
                yield flag, value or "true", flag in CLI_CONTEXT
        i += 1


def _feature_values(task: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(attribute, value) of the task's routed fields: discrete ones as they are, continuous ones bucketed,
    and each `key=value` sub-rule of splitRule."""
    pairs = [(k, str(task[k])) for k in DISCRETE if task.get(k) not in (None, "")]
    pairs += [(k, bucket(k, task[k])) for k in BUCKETS if task.get(k) not in (None, "")]
    for rule in str(task.get("splitRule") or "").split(","):
        key, sep, value = rule.partition("=")
        if sep and key.strip():
            pairs.append((f"splitRule:{key.strip()}", value.strip()))
    return pairs


def status_symptom(status: str) -> Node:
    return make_node(NodeType.SYMPTOM, f"TaskStatus{status[:1].upper()}{status[1:]}")


def error_symptom(error_dialog: str) -> Node:
    text = html.unescape(_TAGS.sub(" ", error_dialog)).strip()
    return make_node(NodeType.SYMPTOM, signature(text)[: budgets.BAMBOO_SYMPTOM_MAX_CHARS], text,
                     raw_description=error_dialog)


def _bounded(hints: Mapping[str, str]) -> dict[str, str]:
    """The hints in order, cut to PANDA_HINT_TOTAL_CHARS together."""
    budget, kept = budgets.PANDA_HINT_TOTAL_CHARS, {}
    for key, text in hints.items():
        if budget <= 0:
            break
        kept[key], budget = text[:budget], budget - len(text)
    return kept


class PandaStrategy:
    name = "panda"

    def __init__(self, deps: StrategyDeps) -> None:
        self._llm = deps.llm
        self._salt = deps.salt
        self._panda = deps.panda

    def incident_id(self, incident: IncidentInput) -> str:
        if incident.incident_id:
            return incident.incident_id
        t = incident.task_data
        return derive_id("panda", str(t.get("jediTaskID", "")), str(t.get("status", "")))

    def task_summary(self, incident: IncidentInput) -> dict[str, Any]:
        keys = ("jediTaskID", "status", "errorDialog", "retryID", "transUses", "prodSourceLabel", "taskType")
        return {k: incident.task_data[k] for k in keys if k in incident.task_data}

    async def prefetch_hints(self, incident: IncidentInput) -> dict[str, str]:
        """Documentation sections about the error (docs index) and where it is raised (the source navigator, under
        "source code analysis"), bounded together; fail-open: an unreadable index or a failed navigation leaves
        its part out, with a warning."""
        error = html.unescape(_TAGS.sub(" ", str(incident.task_data.get("errorDialog") or ""))).strip()
        error = (error or incident.email_text.strip())[:300]
        if self._panda is None or not error:
            return {}
        hints: dict[str, str] = {}
        try:
            hints = await asyncio.to_thread(self._doc_hints, error, str(incident.task_data.get("status") or ""))
        except (AgentError, OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("panda prefetch hints unavailable; extracting without them: %s", exc)
        navigator = self.source_navigator()
        if navigator is not None:
            try:
                hints[SOURCE_HINT] = await navigator.navigate(error)
            except (AgentError, OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("panda source navigation failed; no source hint: %s", exc)
        return _bounded({k: v for k, v in hints.items() if v})

    def _doc_hints(self, error: str, status: str) -> dict[str, str]:
        docs = self._panda.docs if self._panda else None
        if docs is None or not docs.available():
            return {}
        hits = docs.search(f"task status {status} {error}".strip(), budgets.PANDA_HINT_DOCS * 2)
        return {f"doc {h['path']}: {h['title']}": h["snippet"]
                for h in [h for h in hits if "API" not in h["title"]][: budgets.PANDA_HINT_DOCS]}

    def source_navigator(self) -> PandaSourceNavigator | None:
        """The source-navigator hook: the offline source index, once built."""
        source = self._panda.source if self._panda else None
        return PandaSourceNavigator(source) if source is not None and source.available() else None

    def builtin_clients(self, incident: IncidentInput) -> list[McpClient]:
        """The PanDA tools for this incident's task (none without PanDA support configured)."""
        if self._panda is None:
            return []
        from hummingbird_agent.bamboo.panda.catalogue import panda_client

        return [panda_client(self._panda, incident.task_data)]

    def facts(self, task: Mapping[str, Any]) -> list[Node]:
        nodes = [make_node(NodeType.TASK_FEATURE, f"{a}={v}", attribute=a, value=v) for a, v in _feature_values(task)]
        nodes += [make_node(NodeType.TASK_FEATURE, f"{k}={pseudonym(self._salt, k, str(task[k]))}", attribute=k)
                  for k in IDENTITY if task.get(k)]
        nodes += self._cli(str(task.get("task_creation_arguments") or ""))
        nodes += [make_node(NodeType.TASK_CONTEXT, k, str(task[k])) for k in UNSTRUCTURED if task.get(k)]
        if task.get("status"):
            nodes.append(status_symptom(str(task["status"])))
        if task.get("errorDialog"):
            nodes.append(error_symptom(str(task["errorDialog"])))
        return nodes

    def _cli(self, text: str) -> list[Node]:
        if not text.strip():
            return []
        first = text.split()[0]
        nodes = [] if first.startswith("-") else [make_node(NodeType.COMPONENT, first, system="submission_tool")]
        args = sorted(cli_arguments(text))
        nodes += [make_node(NodeType.TASK_FEATURE, f"task_creation_arguments:{f}={v}", attribute=f, value=v)
                  for f, v, ctx in args if not ctx]
        nodes += [make_node(NodeType.TASK_CONTEXT, f"task_creation_arguments:{f}", v) for f, v, ctx in args if ctx]
        return nodes

    async def extract(self, incident: IncidentInput, doc_hints: Mapping[str, str],
                      feedback: str = "", existing: Sequence[str] = ()) -> KnowledgeGraph:
        facts = self.facts(incident.task_data)
        logs = "\n\n".join(f"### {k}\n{clip(v, budgets.BAMBOO_PROMPT_LOG_CHARS)}"
                           for k, v in sorted(incident.task_logs.items()))
        nodes, edges = await extract_causal(self._llm, DOMAIN, self.task_summary(incident), facts,
                                            incident.email_text, logs, doc_hints, feedback, existing)
        symptoms = [n for n in facts if n.type is NodeType.SYMPTOM]
        context = [Edge(f.key, RelType.ASSOCIATED_WITH, s.key) for f in facts
                   if f.type is NodeType.TASK_FEATURE for s in symptoms]
        return KnowledgeGraph(tuple(facts + nodes), tuple(context + edges))
