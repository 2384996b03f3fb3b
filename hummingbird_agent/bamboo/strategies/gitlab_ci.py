"""`gitlab_ci` strategy (the default): a failed GitLab CI job and its fix.

task_data: project, mr, pipeline, sha, job, stage, status, failure_reason, runner_tags, image, command,
konflux, testing_farm (and `jobs` when several failed). Task_Features are deterministic `attribute=value`
facts; Symptoms are normalised error signatures from the failing jobs' log excerpts; the LLM adds causes,
resolutions and procedures. The prefetch hint is the failing job's definition from the CI config file the
project's settings name, at the incident's commit, merged with the files it includes from the same repository.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import Edge, KnowledgeGraph, Node, NodeType, RelType, derive_id, make_node
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps
from hummingbird_agent.bamboo.strategies.causal import clip, extract_causal
from hummingbird_agent.bamboo.strategies.ci_config import job_definition
from hummingbird_agent.bamboo.strategies.ci_includes import ci_config_file, read_ci_config
from hummingbird_agent.errors import AgentError
from hummingbird_agent.logs import excerpt_lines, signature
from hummingbird_agent.logs.cues import cue_score
from hummingbird_agent.logs.fingerprint import strong_lines

log = logging.getLogger(__name__)
# task_logs keys of what an engineer answered request_human_input (ContextEnricher), never log excerpts.
HUMAN_INPUT_SOURCE = "human_input:"
DOMAIN = ("GitLab CI merge-request pipelines: jobs run in containers on runners; Konflux builds "
          "(Tekton PipelineRuns) and Testing Farm test plans report into the pipeline.")
_PARALLEL = re.compile(r"\s+\d+/\d+$")  # `test 2/4`: parallel jobs share one identity
_DIGEST = re.compile(r"@sha256:[0-9a-f]+$")
_SCALARS = ("project", "stage", "failure_reason", "status")


def _outcomes(value: Any) -> Iterator[tuple[str, str]]:
    """`{name: outcome}` or `[{"name"|"pipelinerun"|"plan": ..., "outcome"|"status"|"result": ...}]`."""
    if isinstance(value, Mapping):
        yield from ((str(k), str(v)) for k, v in value.items())
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, Mapping):
                name = item.get("name") or item.get("pipelinerun") or item.get("plan") or item.get("task")
                outcome = item.get("outcome") or item.get("status") or item.get("result")
                if name and outcome:
                    yield str(name), str(outcome)


def task_features(task: Mapping[str, Any]) -> list[Node]:
    facts: list[tuple[str, str]] = [(k, str(task[k])) for k in _SCALARS if task.get(k) not in (None, "")]
    if task.get("job"):
        facts.append(("job", _PARALLEL.sub("", str(task["job"]))))
    if task.get("image"):
        facts.append(("image", _DIGEST.sub("", str(task["image"]))))
    if task.get("command"):
        facts.append(("command", str(task["command"])[: budgets.BAMBOO_COMMAND_MAX_CHARS]))
    facts += [("runner_tag", str(tag)) for tag in task.get("runner_tags") or []]
    facts += [(f"konflux:{name}", outcome) for name, outcome in _outcomes(task.get("konflux"))]
    facts += [(f"testing_farm:{name}", outcome) for name, outcome in _outcomes(task.get("testing_farm"))]
    return [make_node(NodeType.TASK_FEATURE, f"{a}={v}", attribute=a, value=v) for a, v in facts]


def log_symptoms(source: str, text: str) -> tuple[list[Node], str]:
    """The first distinct strong error signatures of one log, and its excerpt for the prompt."""
    excerpt = excerpt_lines(text.splitlines(), max_lines=budgets.BAMBOO_LOG_EXCERPT_LINES)
    seen: dict[str, Node] = {}
    for name, line in strong_lines(line for _, line in excerpt.lines):
        name = name[: budgets.BAMBOO_SYMPTOM_MAX_CHARS]
        if name not in seen and len(seen) < budgets.BAMBOO_MAX_SYMPTOMS_PER_LOG:
            seen[name] = make_node(NodeType.SYMPTOM, name, line.strip(), log_source=source)
    rendered = "\n".join(f"{n:>6} {line}" for n, line in excerpt.lines)
    return list(seen.values()), rendered


def weak_symptom(source: str, text: str) -> Node | None:
    """A log without a strong error line: its excerpt's line with the most failure evidence (the first
    on a tie, the headline of a short failure excerpt), so the incident still has a symptom to match."""
    excerpt = excerpt_lines(text.splitlines(), max_lines=budgets.BAMBOO_LOG_EXCERPT_LINES)
    best: tuple[float, str, str] | None = None
    for line in [line for _, line in excerpt.lines] or text.splitlines():
        name = signature(line)[: budgets.BAMBOO_SYMPTOM_MAX_CHARS]
        if name and (best is None or cue_score(line) > best[0]):
            best = (cue_score(line), name, line.strip())
    return make_node(NodeType.SYMPTOM, best[1], best[2], log_source=source) if best else None


def fallback_symptom(task: Mapping[str, Any], logs: Mapping[str, str] | None = None) -> Node | None:
    """When no log has a strong error line: the stated error message, else the logs' strongest line,
    else the runner's failure reason."""
    message = str(task.get("error") or task.get("error_message") or "")
    if message:
        return make_node(NodeType.SYMPTOM, signature(message)[: budgets.BAMBOO_SYMPTOM_MAX_CHARS], message)
    for source, text in sorted((logs or {}).items()):
        if (node := weak_symptom(source, text)) is not None:
            return node
    if task.get("failure_reason"):
        return make_node(NodeType.SYMPTOM, f"job failed: {task['failure_reason']}")
    return None


class GitLabCIStrategy:
    name = "gitlab_ci"

    def __init__(self, deps: StrategyDeps) -> None:
        self._llm = deps.llm
        self._files = deps.files

    def incident_id(self, incident: IncidentInput) -> str:
        if incident.incident_id:
            return incident.incident_id
        t = incident.task_data
        return derive_id("gitlab_ci", str(t.get("project", "")), str(t.get("pipeline", "")), str(t.get("job", "")))

    def task_summary(self, incident: IncidentInput) -> dict[str, Any]:
        keys = ("project", "mr", "pipeline", "sha", "job", "stage", "status", "failure_reason", "runner_tags",
                "image", "command", "konflux", "testing_farm", "jobs")
        return {k: incident.task_data[k] for k in keys if k in incident.task_data}

    async def prefetch_hints(self, incident: IncidentInput) -> dict[str, str]:
        """The failing job's definition (script, image, rules...) in the CI config file the project's settings
        name, at the incident's commit, with its same-repository includes; {} when the commit, the job, the file
        or the definition is not there (a config or job from another project or a URL)."""
        t = incident.task_data
        project, sha, job = str(t.get("project") or ""), str(t.get("sha") or ""), str(t.get("job") or "")
        if self._files is None or not (project and sha and job):
            return {}
        path = await ci_config_file(self._files, project)
        if path is None:
            return {}
        try:
            config = await read_ci_config(self._files, project, sha, path)
        except AgentError as exc:
            log.warning("CI config of %s not read; extracting without it: %s", project, exc)
            return {}
        definition = job_definition(config, job)
        return {f"job {job} in {path} at {sha[:12]}": definition} if definition else {}

    def facts(self, incident: IncidentInput) -> tuple[list[Node], str]:
        features = task_features(incident.task_data)
        symptoms: list[Node] = []
        excerpts: list[str] = []
        for source, text in sorted(incident.task_logs.items()):
            if source.startswith(HUMAN_INPUT_SOURCE):  # an engineer's answer, not a log: shown as written
                excerpts.append(f"### {source}\n{clip(text, budgets.BAMBOO_PROMPT_LOG_CHARS)}")
                continue
            found, rendered = log_symptoms(source, text)
            symptoms += [s for s in found if s.name not in {x.name for x in symptoms}]
            excerpts.append(f"### {source}\n{clip(rendered, budgets.BAMBOO_PROMPT_LOG_CHARS)}")
        if not symptoms and (fallback := fallback_symptom(incident.task_data, incident.task_logs)) is not None:
            symptoms.append(fallback)
        return symptoms + features, "\n\n".join(excerpts)

    async def extract(self, incident: IncidentInput, doc_hints: Mapping[str, str],
                      feedback: str = "", existing: Sequence[str] = ()) -> KnowledgeGraph:
        facts, logs = self.facts(incident)
        nodes, edges = await extract_causal(self._llm, DOMAIN, self.task_summary(incident), facts,
                                            incident.email_text, logs, doc_hints, feedback, existing)
        symptoms = [n for n in facts if n.type is NodeType.SYMPTOM]
        # Features describe the failing task; tie them to its symptoms so they are never isolated.
        context = [Edge(f.key, RelType.ASSOCIATED_WITH, s.key) for f in facts
                   if f.type is NodeType.TASK_FEATURE for s in symptoms]
        return KnowledgeGraph(tuple(facts + nodes), tuple(context + edges))
