"""An analysis is never built from no data, and a note links only to runs the run saw: `run` against the
scripted OpenAI-compatible server (a self-hosted endpoint, so tool calls written as JSON text are read) and the
fake GitLab, through the real CLI parser, loop, registry and note."""

from __future__ import annotations

import io
import json
import uuid
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import requests

from hummingbird_agent.agent import AgentLoop, Budget, SystemPrompt
from hummingbird_agent.agent.links import UNSEEN
from hummingbird_agent.agent.report import NO_CALLS, NO_DATA_LINE
from hummingbird_agent.cli import build_parser
from hummingbird_agent.cli.run import build_request, execute, report
from hummingbird_agent.config.loading import LoadedConfig, load_config
from hummingbird_agent.metrics import Metrics
from hummingbird_agent.models import ScriptedModel, ScriptedTurn, ToolCall, build_model, tool_message, user_text
from hummingbird_agent.runner.agent_executor import AgentExecutor
from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.sandbox import SandboxFactory
from hummingbird_agent.tools import Spiller, ToolDef, ToolRegistry
from tests.servers.gemini import function_call_turn, text_turn
from tests.servers.gitlab import GitLabServer
from tests.servers.openai import OpenAIServer

REPO = Path(__file__).resolve().parents[2]
INVENTED = "https://gitlab.example.com/group/project/-/jobs/999"
NO_DATA_ANSWER = f"### Analysis\nThe [unit-tests job]({INVENTED}) failed on a flaky network; see {INVENTED}."


def job_log_tool(base: str, token: str) -> ToolDef:
    def get_job_log(job: int) -> dict[str, Any]:
        resp = requests.get(f"{base}/api/v4/projects/1/jobs/{job}/trace", headers={"PRIVATE-TOKEN": token}, timeout=10)
        resp.raise_for_status()
        return {"web_url": f"{base}/group/project/-/jobs/{job}", "log": resp.text}

    params = {"type": "object", "properties": {"job": {"type": "integer"}}, "required": ["job"]}
    return ToolDef("get_job_log", "a job's log and web URL", params, get_job_log)


def register(gitlab: GitLabServer, registry: ToolRegistry, loaded: LoadedConfig, workflow: str, project: str) -> None:
    registry.register_data_source("gitlab", [job_log_tool(gitlab.url, "read-token")])


def loaded_config(tmp_path: Path, server: OpenAIServer, require_data: bool, iterations: int = 4) -> LoadedConfig:
    config = {
        "model": {"provider": "openai", "base_url": f"{server.url}/v1", "name": "qwen"},
        "workflows": {"analyze-failures": {
            "description": "analyse", "prompt": str(REPO / "workflows/analyze-failures.md"),
            "max_iterations": iterations, "require_data": require_data,
            "data_sources": {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}}}},
    }
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    return load_config(tmp_path / "config.yaml", {"GITLAB_READ_TOKEN": "read-token"})


async def run_cli(loaded: LoadedConfig, gitlab: GitLabServer) -> tuple[int, str]:
    args = build_parser().parse_args(["run", "analyze-failures", "--project", "group/project", "--mr", "7"])
    out, err = io.StringIO(), io.StringIO()
    outcome = await execute(loaded, build_request(args), build_model(loaded), None, partial(register, gitlab),
                            out=out, err=err)
    return report(outcome, err), out.getvalue()


@pytest.fixture
def gitlab(gitlab_server: GitLabServer) -> GitLabServer:
    gitlab_server.add_project(1, "group/project")
    gitlab_server.add_job(1, 502, trace="compiling\nerror: undefined reference to `frob`\n")
    return gitlab_server


@pytest.fixture
def local_server() -> Any:
    with OpenAIServer(api_key=None) as server:
        yield server
    assert not server.errors, server.errors


async def test_an_answer_without_data_is_nudged_once_then_says_so_in_its_first_line(
        tmp_path: Path, gitlab: GitLabServer, local_server: OpenAIServer) -> None:
    local_server.script(text_turn(NO_DATA_ANSWER), text_turn(NO_DATA_ANSWER))
    code, out = await run_cli(loaded_config(tmp_path, local_server, require_data=True), gitlab)
    assert code == 0 and out.splitlines()[0] == NO_DATA_LINE
    assert INVENTED not in out and f"The unit-tests job failed on a flaky network; see {UNSEEN}." in out
    looked_at = out[out.index("<details>"):out.index("</details>")]
    assert "2 link(s) to jobs, pipelines or merge requests this run did not see were removed." in looked_at
    assert NO_CALLS in looked_at and "No tool calls.\n" not in looked_at
    first, second = (c.wire["messages"] for c in local_server.generate_calls)
    assert second[:-2] == first and second[-2] == {"role": "assistant", "content": NO_DATA_ANSWER}
    assert second[-1]["role"] == "user" and second[-1]["content"].startswith("## You have not read any data yet")
    assert "(get_job_log)" in second[-1]["content"]


async def test_a_nudged_model_that_reads_the_log_gets_a_plain_note_with_only_seen_links(
        tmp_path: Path, gitlab: GitLabServer, local_server: OpenAIServer) -> None:
    seen = f"{gitlab.url}/group/project/-/jobs/502"
    local_server.script(text_turn(NO_DATA_ANSWER),
                        text_turn('```json\n{"name": "get_job_log", "arguments": {"job": 502}}\n```'),
                        text_turn(f"The [unit-tests job]({seen}) failed: undefined reference to `frob` "
                                  f"(not [job 999]({INVENTED}))."))
    code, out = await run_cli(loaded_config(tmp_path, local_server, require_data=True), gitlab)
    assert code == 0 and out.startswith(f"The [unit-tests job]({seen}) failed: undefined reference to `frob` "
                                        "(not job 999).")
    assert NO_DATA_LINE not in out and INVENTED not in out
    looked_at = out[out.index("<details>"):out.index("</details>")]
    assert "1 link(s) to jobs" in looked_at and "1. `get_job_log` job=`502`" in looked_at
    tool_reply = local_server.generate_calls[2].wire["messages"][-1]
    assert tool_reply["role"] == "tool" and "undefined reference" in tool_reply["content"]


async def test_a_workflow_that_need_not_read_data_answers_at_once_but_never_as_if_it_had(
        tmp_path: Path, gitlab: GitLabServer, local_server: OpenAIServer) -> None:
    local_server.script(text_turn("Nothing to look at."))
    code, out = await run_cli(loaded_config(tmp_path, local_server, require_data=False), gitlab)
    assert code == 0 and out.startswith("Nothing to look at.\n\n<details>")
    assert NO_CALLS in out and len(local_server.generate_calls) == 1


async def test_a_nudged_run_that_the_budget_ends_posts_no_answer(
        tmp_path: Path, gitlab: GitLabServer, local_server: OpenAIServer) -> None:
    local_server.script(text_turn(NO_DATA_ANSWER), function_call_turn("get_job_log", {"job": 502}))
    code, out = await run_cli(loaded_config(tmp_path, local_server, require_data=True, iterations=2), gitlab)
    assert code == 1 and out.splitlines()[0] == NO_DATA_LINE
    assert "flaky network" not in out and "**Hummingbird stopped: the iteration budget ran out" in out


@pytest.mark.parametrize(("earlier", "nudged"), [({"result": "error: exit 1"}, False),
                                                 ({"error": "not found", "error_kind": "not_found"}, True)])
async def test_data_read_in_the_resumed_session_counts(earlier: dict[str, Any], nudged: bool) -> None:
    history = [user_text("{}"), {"role": "model", "parts": [{"functionCall": {"name": "get_job_log", "args": {}}}]},
               tool_message([ToolCall("get_job_log", {})], [earlier]), {"role": "model", "parts": [{"text": "A."}]},
               user_text("And the other job?")]
    model = ScriptedModel([ScriptedTurn(text="B."), ScriptedTurn(text="C.")])
    registry = ToolRegistry(Spiller(None))  # type: ignore[arg-type]  # no call reaches a sandbox
    registry.register_data_source("gitlab", [job_log_tool("http://127.0.0.1:9", "t")])
    loop = AgentLoop(model, "m", registry, SystemPrompt("BASE", "", "WF"), Budget(3), data_tools=frozenset(
        registry.data_source_tools()))
    result = await loop.run(history)
    assert (result.final_text, result.no_data, len(model.requests)) == (("C.", True, 2) if nudged else ("B.", False, 1))


async def test_the_service_counts_a_run_without_data_apart(
        tmp_path: Path, gitlab: GitLabServer, local_server: OpenAIServer) -> None:
    loaded = loaded_config(tmp_path, local_server, require_data=True)
    local_server.script(text_turn(NO_DATA_ANSWER), text_turn(NO_DATA_ANSWER))
    metrics, posted = Metrics(), []

    async def publish(ok: bool, note: str) -> None:
        posted.append(note)

    async def save(context: Any, transcript: str, archive: Any) -> None:
        pass

    model = build_model(loaded)
    executor = AgentExecutor(loaded, model, SandboxFactory(loaded.config.sandbox).new, partial(register, gitlab),
                             metrics=metrics)
    order = WorkOrder("new_session", str(uuid.uuid4()), "analyze-failures", "pipeline", 1, "group/project", 7)
    try:
        await executor.run(order, None, publish, save)
    finally:
        await model.aclose()
    assert posted[0].startswith(NO_DATA_LINE)
    runs = metrics.registry.get_sample_value
    assert runs("hummingbird_runs_total", {"workflow": "analyze-failures", "outcome": "no_data"}) == 1
    assert runs("hummingbird_runs_total", {"workflow": "analyze-failures", "outcome": "completed"}) is None
