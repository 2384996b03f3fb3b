"""Extraction strategies: deterministic facts, LLM-named causes wired only to known names, registry."""

from __future__ import annotations

import json

import pytest

from hummingbird_agent.bamboo.incident_graph import NodeType, RelType, node_id
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry
from hummingbird_agent.bamboo.strategies.gitlab_ci import log_symptoms
from hummingbird_agent.bamboo.strategies.panda import PandaStrategy
from hummingbird_agent.errors import ConfigError
from tests.bamboo.fakes import facts_of, uncalled_llm
from tests.servers import GeminiServer

LOG_A = ("Running tests\n2024-01-02T03:04:05Z collected 12 items\nE   ConnectionError: timeout after 30s to 10.0.0.5\n"
         "FAILED tests/test_api.py::test_get - ConnectionError\n")
LOG_B = ("Running tests\n2025-06-07T08:09:10Z collected 14 items\nE   ConnectionError: timeout after 12s to 10.0.0.9\n"
         "FAILED tests/test_api.py::test_get - ConnectionError\n")
TASK = {"project": "group/app", "mr": 12, "pipeline": 991, "job": "test 2/4", "stage": "test", "status": "failed",
        "failure_reason": "script_failure", "runner_tags": ["docker"], "image": "python:3.11@sha256:abc123",
        "konflux": [{"name": "app-on-pull-request", "status": "Failed"}], "testing_farm": {"plan/smoke": "error"}}


def cause_rule(system: str, user: str) -> str:
    symptoms = facts_of(user, "Symptom")
    return json.dumps({"causes": [{"name": "Upstream API Timeout.", "confidence": 0.7, "symptoms": symptoms,
                                   "features": ["stage=test", "invented=feature"]}],
                       "resolutions": [{"name": "Mock the upstream", "steps": ["add a fixture"],
                                        "cause": "upstream api timeout"}],
                       "procedures": [{"name": "read job log", "tools": ["get_job_log"],
                                       "cause": "upstream api timeout"},
                                      {"name": "diff with green run", "cause": "upstream api timeout",
                                       "depends_on": [{"name": "read job log", "reason": "needs the test name"}]}],
                       "components": [{"name": "requests", "version": "2.31", "cause": "upstream api timeout"}]})


@pytest.fixture
def model(gemini_server: GeminiServer, llm: JsonLLM) -> JsonLLM:
    gemini_server.respond_with(cause_rule)
    return llm


def extractor(llm: JsonLLM, name: str = "gitlab_ci") -> KnowledgeGraphExtractor:
    return KnowledgeGraphExtractor(default_registry().create(name, StrategyDeps(llm, b"salt")))


def test_same_failure_in_two_pipelines_gives_the_same_symptom_names() -> None:
    a, _ = log_symptoms("job", LOG_A)
    b, _ = log_symptoms("job", LOG_B)
    assert [s.name for s in a] == [s.name for s in b]
    assert a[0].name == "E ConnectionError: timeout after <DUR> to <N>.<N>.<N>.<N>"


async def test_gitlab_ci_graph(gemini_server: GeminiServer, model: JsonLLM) -> None:
    ext = extractor(model)
    graph = await ext.extract(IncidentInput("fixed by mocking", TASK, {}, {"test": LOG_A}))
    features = {n.name for n in graph.of_type(NodeType.TASK_FEATURE)}
    assert features == {"project=group/app", "stage=test", "failure_reason=script_failure", "status=failed",
                        "job=test", "image=python:3.11", "runner_tag=docker",
                        "konflux:app-on-pull-request=Failed", "testing_farm:plan/smoke=error"}
    [cause] = graph.of_type(NodeType.CAUSE)
    assert cause.name == "upstream api timeout" and cause.id == node_id(NodeType.CAUSE, cause.name)
    kinds = {(e.type, e.source[1], e.target[1]) for e in graph.edges}
    assert (RelType.CONTRIBUTE_TO, "stage=test", cause.name) in kinds
    assert not any(e.source[1] == "invented=feature" for e in graph.edges)
    assert (RelType.SOLVED_BY, cause.name, "mock the upstream") in kinds
    assert (RelType.DEPENDS_ON, "diff with green run", "read job log") in kinds
    assert (RelType.ORIGINATED_FROM, "requests", cause.name) in kinds
    assert all(e.allowed for e in graph.edges)
    [(_, user)] = gemini_server.prompts
    assert "ConnectionError" in user and "fixed by mocking" in user


async def test_gitlab_ci_without_logs_falls_back_to_the_failure_reason(model: JsonLLM) -> None:
    ext = extractor(model)
    graph = await ext.extract(IncidentInput("", {"project": "p", "failure_reason": "stuck_or_timeout_failure"}))
    assert [s.name for s in graph.of_type(NodeType.SYMPTOM)] == ["job failed: stuck_or_timeout_failure"]


async def test_panda_routing(model: JsonLLM) -> None:
    ext = extractor(model, "panda")
    task = {"jediTaskID": 42, "status": "exhausted", "ramCount": 3000, "walltime": "abc", "coreCount": 8,
            "splitRule": "nG=1,t1=5", "userName": "alice", "taskName": "user.alice.test",
            "errorDialog": "<a href='x'>log</a> scout_ramCount 4000 MB exceeds",
            "task_creation_arguments": "prun --exec 'run.sh' --nFiles=3 --outDS user.x --express"}
    graph = await ext.extract(IncidentInput("", task))
    names = {n.name for n in graph.of_type(NodeType.TASK_FEATURE)}
    assert {"coreCount=8", "ramCount=2-3GB", "walltime=abc", "splitRule:nG=1", "splitRule:t1=5",
            "task_creation_arguments:nFiles=3", "task_creation_arguments:express=true"} <= names
    assert not any("outDS" in n or "alice" in n for n in names)
    assert any(n.startswith("userName=user-") for n in names)
    assert {n.name for n in graph.of_type(NodeType.SYMPTOM)} == {"TaskStatusExhausted",
                                                                  "log scout_ramCount <SIZE> exceeds"}
    assert [c.name for c in graph.of_type(NodeType.COMPONENT)] == ["prun", "requests"]
    assert {n.name for n in graph.of_type(NodeType.TASK_CONTEXT)} == {"taskName", "task_creation_arguments:exec"}
    ids = PandaStrategy(StrategyDeps(uncalled_llm())).incident_id(IncidentInput("", task))
    assert ids == ext.incident_id(IncidentInput("", dict(task)))


def test_unknown_strategy_lists_the_registered_ones() -> None:
    with pytest.raises(ConfigError, match=r"'jira' is not registered \(registered: gitlab_ci, panda\)"):
        default_registry().create("jira", StrategyDeps(uncalled_llm()))
