"""Exploring a PanDA incident from config (panda strategy, bamboo.panda, an external MCP server): the
orchestration code runs in a real Podman sandbox, chains find_similar_successful_tasks into
compare_failed_vs_successful_job_logs against the fake PanDA server, and what it found reaches the
re-extraction; a state-changing tool is refused at the call; no credential reaches the sandbox or a model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.factory import build_accumulator, build_stores
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.config.loading import load_config
from hummingbird_agent.models.gemini import GeminiModel
from tests.bamboo.fakes import EXTRACT, REVIEW, causal_answer, users
from tests.bamboo.mcp_servers import SERVER
from tests.bamboo.panda_fixtures import TOKEN, VO, panda, task
from tests.bamboo.test_explorer_wiring import CODE, GAPS
from tests.servers import GeminiServer
from tests.servers.panda import PandaServer

__all__ = ["panda"]
pytestmark = pytest.mark.podman
CHAIN = """\
similar = await tools.find_similar_successful_tasks(n_tasks=5)
reference = similar['tasks'][0]['jediTaskID']
found = await tools.compare_failed_vs_successful_job_logs(reference_task_id=reference)
try:
    await tools.restart_runner(runner='r1')
    refused = 'not refused'
except Exception as exc:
    refused = 'refused: ' + str(exc)
env = ' '.join(__import__('os').environ.values())
return {'reference_task': reference, 'suspected_step': found['suspected_step'],
        'truncated': found['truncated'], 'guard': refused, 'sandbox_env': env}
"""


def rules(system: str, user: str) -> str:
    if system.startswith(EXTRACT):
        if "Running step RAWtoESD" not in user:
            return "{}"
        return causal_answer("payload killed during RAWtoESD", procedure="compare with a successful task's log")
    if system.startswith(REVIEW):
        return json.dumps({"approved": True, "confidence": 0.9})
    if system.startswith(GAPS):
        return json.dumps({"gaps": [{"gap": "where the failed job stopped", "resolvable": True}]})
    if system.startswith(CODE):
        return json.dumps({"orchestration_code": CHAIN})
    return "A summary."


@pytest.mark.timeout(300)
async def test_panda_exploration_chains_tools_in_the_sandbox(
        panda: PandaServer, tmp_path: Path, gemini_server: GeminiServer, gemini_model: GeminiModel) -> None:
    marker = tmp_path / "restarted.txt"
    (tmp_path / "mcp.json").write_text(json.dumps({"servers": [
        {"name": "ci", "command": sys.executable, "args": [str(SERVER), "stdio"],
         "env": {"MCP_TEST_MARKER": str(marker)}}]}))
    config = {"model": {"provider": "scripted", "script": "turns.json"},
              "sandbox": {"memory_bytes": 512 * 2**20, "workdir_bytes": 64 * 2**20},
              "bamboo": {"enabled": True, "explore": True, "extraction_strategy": "panda",
                         "mcp_servers_config": "mcp.json", "graph": {"path": "kb/graph"},
                         "vectors": {"path": "kb/qdrant"}, "embeddings": {"dimensions": 64},
                         "panda": {"url": panda.api_url, "log_url": panda.log_url, "token_env": "PANDA_ID_TOKEN",
                                   "auth_vo": VO}},
              "workflows": {}}
    (tmp_path / "turns.json").write_text(json.dumps({"turns": [{"text": "{}"}]}))
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    loaded = load_config(tmp_path / "config.yaml", environ={"PANDA_ID_TOKEN": TOKEN})
    gemini_server.respond_with(rules)
    accumulator = build_accumulator(loaded, gemini_model, build_stores(loaded))
    incident = IncidentInput("Task 1001 went exhausted.", task(panda), incident_id="panda-1001")

    result = await accumulator.process(incident, dry_run=True)

    assert result.approved and result.attempts == 2
    assert "payload killed during rawtoesd" in {n.name for n in result.knowledge.graph.nodes}
    retry = next(user for user in users(gemini_server, EXTRACT) if "RAWtoESD" in user)
    assert "[explored orchestration:reference_task] 900" in retry
    assert "[explored orchestration:suspected_step] 2026-11-20 09:01:00 INFO Running step RAWtoESD" in retry
    # The state-changing tool was refused at the call and never ran.
    assert "[explored orchestration:guard] refused: restart_runner: not an allowed (read-only) tool" in retry
    assert not marker.exists()
    # The chain went to PanDA with the token; the token reached neither the sandbox nor any request to the model.
    assert panda.requests_to("get_tasks_modified_since") and panda.requests_to("/logs/6001/payload.stdout")
    assert all(r.header("Authorization") == f"Bearer {TOKEN}" for r in panda.requests)
    assert gemini_server.requests and not any(TOKEN.encode() in r.body for r in gemini_server.requests)
