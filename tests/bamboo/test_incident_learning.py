"""What an incident brings to extraction beyond its logs: the failing job's CI definition (prefetch hint,
read through the GitLab data source from the fake GitLab), exploration results as context (never as
Task_Features), and the fix as the evidence of its Resolutions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.incident_graph import NodeType
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.incidents import parse_incident
from hummingbird_agent.bamboo.strategies.base import IncidentInput, RepoFiles, StrategyDeps, default_registry
from hummingbird_agent.bamboo.strategies.ci_config import job_definition, parse_config
from hummingbird_agent.config.loading import (
    Config,
    DataSourcesConfig,
    GitLabConfig,
    GitLabSourceConfig,
    LoadedConfig,
    WorkflowConfig,
)
from hummingbird_agent.data_sources.direct import WorkflowFiles
from tests.bamboo.fakes import facts_of
from tests.servers import GeminiServer, GitLabServer

SHA = "5" * 40
LOG = "$ pytest -q\nE   ConnectionError: timeout after 30s to 10.0.0.5\nERROR: Job failed: exit code 1\n"
TASK = {"project": "group/app", "mr": 3, "sha": SHA, "job": "unit 2/4", "stage": "test", "status": "failed",
        "failure_reason": "script_failure", "command": "pytest -q"}
CI = """\
default:
  image: python:3.12
.tests:
  stage: test
  tags: [docker]
  variables: {A: "1"}
  before_script: [pip install -e .]
unit:
  extends: .tests
  script:
    - !reference [.setup, script]
    - pytest -q
  rules:
    - if: $CI_MERGE_REQUEST_IID
  parallel: 4
"""
FIX = {"commits": "555555555555..666666666666", "files": ["tests/conftest.py"], "titles": ["Mock the API"],
       "diff": "--- tests/conftest.py\n@@ -1 +1,2 @@\n+MOCK = True"}


def answer(system: str, user: str) -> str:
    return json.dumps({"causes": [{"name": "upstream api timeout", "symptoms": facts_of(user, "Symptom")}],
                       "resolutions": [{"name": "mock the upstream api", "cause": "upstream api timeout"}]})


@pytest.fixture
def model(gemini_server: GeminiServer, llm: JsonLLM) -> JsonLLM:
    gemini_server.respond_with(answer)
    return llm


def extractor(llm: JsonLLM, files: RepoFiles | None = None) -> KnowledgeGraphExtractor:
    return KnowledgeGraphExtractor(default_registry().create("gitlab_ci", StrategyDeps(llm, b"salt", files)))


def workflow_files(tmp_path: Path, server: GitLabServer) -> WorkflowFiles:
    sources = DataSourcesConfig(gitlab=GitLabSourceConfig(token_env="READ"))
    config = Config(gitlab=GitLabConfig(url=server.url),
                    workflows={"bamboo-accumulate": WorkflowConfig(description="d", prompt="p.md",
                                                                   data_sources=sources)})
    return WorkflowFiles(LoadedConfig(config, tmp_path / "config.yaml", {"READ": server.read_token}),
                         "bamboo-accumulate")


def test_job_definition_applies_extends_and_defaults() -> None:
    definition = job_definition(parse_config(CI), "unit 2/4")
    assert definition is not None
    assert definition.splitlines() == [
        "stage: test", "image: python:3.12", "tags:", "- docker", "before_script:", "- pip install -e .",
        "script:", "- - '!reference'", "  - .setup", "  - script", "- pytest -q", "rules:",
        "- if: $CI_MERGE_REQUEST_IID"]
    assert job_definition(parse_config(CI), "unit: [py3.12]") == definition  # a parallel:matrix name


def test_job_definition_is_none_when_it_cannot_be_read() -> None:
    def definition(text: str) -> str | None:
        return job_definition(parse_config(text), "unit")

    assert definition("include: [{local: ci/tests.yml}]\n") is None  # defined in an include not read
    assert definition("unit: [unclosed\n") is None
    assert definition("- a list\n") is None
    assert definition("unit: {script: [make]}\n#" + "x" * 600_000) is None  # too large to parse
    assert definition("unit: {script: [make]}\n") == "script:\n- make"
    assert definition("a: &a [*a]\nunit: {extends: [unit]}\n") is None  # extends itself


async def test_prefetch_hints_give_the_failing_jobs_ci_definition(
        tmp_path: Path, gitlab_server: GitLabServer, gemini_server: GeminiServer, model: JsonLLM) -> None:
    gitlab_server.add_project(1, "group/app")
    gitlab_server.add_file(1, ".gitlab-ci.yml", CI, ref=SHA)
    ext = extractor(model, workflow_files(tmp_path, gitlab_server))
    incident = IncidentInput("", TASK, {}, {"unit": LOG})
    hints = await ext.prefetch_hints(incident)
    assert list(hints) == [f"job unit 2/4 in .gitlab-ci.yml at {SHA[:12]}"]
    assert "pytest -q" in hints[f"job unit 2/4 in .gitlab-ci.yml at {SHA[:12]}"]
    await ext.extract(incident, hints)
    assert "$CI_MERGE_REQUEST_IID" in gemini_server.prompts[0][1]
    assert all(r.header("PRIVATE-TOKEN") == gitlab_server.read_token for r in gitlab_server.requests)
    # Fail-open: another commit has no CI config, and an incident without a commit reads nothing.
    requests = len(gitlab_server.requests)
    assert await ext.prefetch_hints(IncidentInput("", {**TASK, "sha": "7" * 40})) == {}
    assert await ext.prefetch_hints(IncidentInput("", {"project": "group/app", "job": "unit"})) == {}
    assert len(gitlab_server.requests) == requests + 2  # the project's CI config path, then the file


async def test_scalar_exploration_results_are_context_not_task_features(
        gemini_server: GeminiServer, model: JsonLLM) -> None:
    ext = extractor(model)
    explored = {"orchestration:failed_count": 3, "orchestration:job": {"id": 7, "runner": "r1"},
                "tool:get_runner_info": "degraded", "orchestration:empty": []}
    graph = await ext.extract(IncidentInput("", TASK, explored, {"unit": LOG}))
    features = {n.name for n in graph.of_type(NodeType.TASK_FEATURE)}
    assert features == {"project=group/app", "stage=test", "failure_reason=script_failure", "status=failed",
                        "job=unit", "command=pytest -q"}
    [(_, prompt)] = gemini_server.prompts
    assert '[explored orchestration:job] {"id": 7, "runner": "r1"}' in prompt
    assert "[explored orchestration:failed_count] 3" in prompt
    assert "[explored tool:get_runner_info] degraded" in prompt and "orchestration:empty" not in prompt


async def test_the_fix_is_the_evidence_of_the_incidents_resolutions(model: JsonLLM) -> None:
    ext = extractor(model)
    graph = await ext.extract(IncidentInput("", TASK, {}, {"unit": LOG}, fix=FIX))
    [resolution] = graph.of_type(NodeType.RESOLUTION)
    assert resolution.prop("evidence_commits") == "555555555555..666666666666"
    assert resolution.prop("evidence_files") == ("tests/conftest.py",)
    assert "+MOCK = True" in resolution.prop("evidence_diff")
    [cause] = graph.of_type(NodeType.CAUSE)
    assert cause.prop("evidence_files") is None
    plain = await ext.extract(IncidentInput("", TASK, {}, {"unit": LOG}))
    assert plain.of_type(NodeType.RESOLUTION)[0].prop("evidence_files") is None
    line = parse_incident(json.dumps({"task_data": TASK, "fix": FIX}))  # `bamboo populate` lines carry it too
    assert line.fix == FIX
