"""ContextEnricher with a scripted model, the real sandbox, builtin tools and a stdio MCP server."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.explore.enricher import ContextEnricher
from hummingbird_agent.bamboo.explore.exploration import ExplorationError
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.bamboo.learn.reviewer import NO_PROCEDURE
from hummingbird_agent.bamboo.mcp import BuiltinMcpClient, build_mcp_client
from hummingbird_agent.bamboo.mcp.procedures import procedure_node
from hummingbird_agent.bamboo.stores.base import NodeRow
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.models import ScriptedModel
from hummingbird_agent.models.scripted import ScriptedTurn
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools import ToolDef
from tests.bamboo.mcp_server import __file__ as SERVER_FILE
from tests.bamboo.sandboxes import box, kept_open

__all__ = ["box"]
pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]
INCIDENT = IncidentInput("", {"project": "g/app", "job": 7, "runner": "r1"})
ISSUES = ["Symptom 'npm ERR! code ETIMEDOUT' has no Cause explaining it → resolvable with get_job"]
JOB_ARG = {"type": "object", "properties": {"job_id": {"type": "integer"}}, "required": ["job_id"]}


def builtin(asked: list[str] | None = None) -> BuiltinMcpClient:
    def get_job(job_id: int) -> dict:
        return {"id": job_id, "status": "failed", "runner": "r1"}

    def get_log(job_id: int) -> str:
        return "npm ERR! code ETIMEDOUT\nnpm ERR! network registry.npmjs.org"

    def request_human_input(prompt: str) -> str:
        (asked if asked is not None else []).append(prompt)
        return "I read the job log and pinged the registry mirror."

    return BuiltinMcpClient([
        ToolDef("get_job", "A CI job's status and runner.", JOB_ARG, get_job),
        ToolDef("get_log", "A CI job's log.", JOB_ARG, get_log),
        ToolDef("request_human_input", "Ask the operator.", {"type": "object", "properties": {
            "prompt": {"type": "string"}}}, request_human_input, read_only=False)])


def scripted(*answers: object) -> tuple[JsonLLM, ScriptedModel]:
    model = ScriptedModel([ScriptedTurn(text=a if isinstance(a, str) else json.dumps(a)) for a in answers])
    return JsonLLM(ModelText(model, "m")), model


def enricher(box: PodmanSandbox, *answers: object, client=None, **kw) -> tuple[ContextEnricher, ScriptedModel]:
    llm, model = scripted(*answers)
    return ContextEnricher(llm, client or builtin(), kept_open(box), **kw), model


GAPS = {"gaps": [{"gap": "the failing job's log lines", "impact": "shows the error", "resolvable": True},
                 {"gap": "the registry's own status page", "resolvable": False}]}
CODE = {"orchestration_code": "job = await tools.get_job(job_id=task['job'])\n"
                              "log = await tools.get_log(job_id=job['id'])\n"
                              "return {'job': job, 'job_log': log}",
        "capability_gaps": [{"investigation": "registry status", "suggested_tool_capability": "status page reader"}]}


async def test_exploratory_run_gathers_data_through_the_sandbox(box: PodmanSandbox) -> None:
    explorer, model = enricher(box, GAPS, CODE)
    found = await explorer.explore(INCIDENT, ISSUES)
    assert found.external_data["orchestration:job"] == {"id": 7, "status": "failed", "runner": "r1"}
    assert found.task_logs["orchestration:job_log"].startswith("npm ERR! code ETIMEDOUT")
    assert found.tool_calls == ("get_job ok", "get_log ok")
    assert found.capability_gaps == ({"investigation": "registry status",
                                      "suggested_tool_capability": "status page reader"},)
    gap_prompt, code_prompt = (r.contents[0]["parts"][0]["text"] for r in model.requests)
    assert "resolvable with get_job" in gap_prompt
    assert "the failing job's log lines" in code_prompt and "registry's own status page" not in code_prompt
    assert "request_human_input" not in code_prompt  # state-changing tools are never offered


async def test_nothing_to_do_gives_an_empty_result_without_llm_calls(box: PodmanSandbox) -> None:
    explorer, model = enricher(box)
    assert await explorer.explore(INCIDENT, []) == await explorer.explore(IncidentInput("x"), ISSUES)
    empty_client = BuiltinMcpClient([])
    explorer, model = enricher(box, client=empty_client)
    found = await explorer.explore(INCIDENT, ISSUES)
    assert not found.external_data and not found.capability_gaps and model.requests == []


async def test_gap_analysis_failure_or_no_gaps_is_a_no_op(box: PodmanSandbox, caplog) -> None:
    explorer, model = enricher(box, "this is not JSON")
    with caplog.at_level(logging.WARNING):
        found = await explorer.explore(INCIDENT, ISSUES)
    assert not found.external_data and len(model.requests) == 2  # a malformed answer is asked for once more
    assert "gap analysis failed; nothing to explore" in caplog.text
    explorer, model = enricher(box, {"gaps": [{"gap": "x", "resolvable": False}]})
    assert not (await explorer.explore(INCIDENT, ISSUES)).external_data and len(model.requests) == 1


@pytest.mark.parametrize("answer", ["not JSON at all", {"orchestration_code": "", "capability_gaps": []},
                                    {"unrelated": 1}])
async def test_genuine_generation_failure_raises(box: PodmanSandbox, answer: object) -> None:
    explorer, _ = enricher(box, GAPS, answer)
    with pytest.raises(ExplorationError):
        await explorer.explore(INCIDENT, ISSUES)


async def test_model_exception_during_planning_raises(box: PodmanSandbox) -> None:
    explorer, _ = enricher(box, GAPS)  # no turn left for the codegen call: the model raises
    with pytest.raises(ExplorationError, match="orchestration code generation failed"):
        await explorer.explore(INCIDENT, ISSUES)


async def test_empty_code_with_capability_gaps_is_legitimate(box: PodmanSandbox) -> None:
    explorer, _ = enricher(box, GAPS, {"orchestration_code": "", "capability_gaps": [
        {"investigation": "runner host metrics", "suggested_tool_capability": "node exporter query"}]})
    found = await explorer.explore(INCIDENT, ISSUES)
    assert found.capability_gaps[0]["investigation"] == "runner host metrics" and found.tool_calls == ()


@pytest.mark.parametrize("code", ["return {'a': ", "raise RuntimeError('boom')", "while True:\n    pass"])
async def test_code_errors_give_empty_data_and_a_warning(box: PodmanSandbox, code: str, caplog) -> None:
    explorer, _ = enricher(box, GAPS, {"code": code}, code_timeout_s=2)
    with caplog.at_level(logging.WARNING):
        found = await explorer.explore(INCIDENT, ISSUES)
    assert found.external_data == {} and found.code == code.strip()
    assert "orchestration code failed; no results this round" in caplog.text
    assert "used the key 'code' for orchestration_code" in caplog.text


async def test_procedure_mode_skips_gap_analysis(box: PodmanSandbox) -> None:
    explorer, model = enricher(box, CODE)
    found = await explorer.explore(INCIDENT, ["procedure read log: get_log(job_id=7)"], "procedure")
    assert "orchestration:job" in found.external_data and len(model.requests) == 1
    assert model.requests[0].system.startswith("You write Python orchestration code that replays")


async def test_no_procedure_issue_is_hard_routed_to_human_input(box: PodmanSandbox) -> None:
    asked: list[str] = []
    explorer, model = enricher(box, client=builtin(asked))
    found = await explorer.explore(INCIDENT, [f"{NO_PROCEDURE} → resolvable with request_human_input"])
    assert found.task_logs == {"human_input:procedures": "I read the job log and pinged the registry mirror."}
    assert len(asked) == 1 and model.requests == []
    assert "request_human_input" in {t.name for t in explorer.available_tools()}


async def test_external_state_changing_tool_is_refused(box: PodmanSandbox, tmp_path: Path, caplog) -> None:
    marker = tmp_path / "restarts.txt"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": [{"name": "ci", "command": sys.executable,
                                               "args": [SERVER_FILE, "stdio"], "read_only_tools": ["^get_"]}]}))
    client = build_mcp_client([builtin()], config, {"PATH": "/usr/bin:/bin", "MCP_TEST_MARKER": str(marker)})
    code = ("info = await tools.get_runner_info(runner=task['runner'])\n"
            "try:\n    await tools.restart_runner(runner='r1')\nexcept Exception as e:\n    info['refused'] = str(e)\n"
            "return info")
    explorer, _ = enricher(box, GAPS, {"orchestration_code": code}, client=client)
    with caplog.at_level(logging.WARNING):
        found = await explorer.explore(INCIDENT, ISSUES)
    assert found.external_data["tool:get_runner_info"]["runner"] == "r1"
    assert "not an allowed (read-only) tool" in found.external_data["orchestration:refused"]
    assert not marker.exists()
    assert "orchestration refused tool=restart_runner" in caplog.text


async def test_procedures_become_tools_replayed_in_the_sandbox(box: PodmanSandbox) -> None:
    node = procedure_node("j = await tools.get_job(job_id=task['job'])\n"
                          "return {'status': j['status'], 'log': await tools.get_log(job_id=j['id'])}")
    assert node is not None and node.name == "proc__get_job__get_log"
    rows = [NodeRow("Procedure", node.name, "", ("i1", "i2"), 2, 0.9, dict(node.props)),
            NodeRow("Procedure", "proc__one", "", ("i3",), 1, 0.9, {"code": "return await tools.get_job(job_id=1)"}),
            NodeRow("Procedure", "proc__writes", "", ("i4",), 1, 0.9,
                    {"code": "await tools.get_job(job_id=1)\nawait tools.request_human_input(prompt='x')"})]
    explorer, model = enricher(box, GAPS, {"orchestration_code": "return await tools.proc__get_job__get_log()"},
                               procedures=rows)
    assert {t.name for t in explorer.available_tools()} >= {"proc__get_job__get_log"}
    assert not {"proc__one", "proc__writes", "proc__get_job__request_human_input"} & {
        t.name for t in explorer.available_tools()}
    found = await explorer.explore(INCIDENT, ISSUES)
    assert found.external_data["orchestration:status"] == "failed"
    assert found.tool_calls == ("get_job ok", "get_log ok", "proc__get_job__get_log ok")

