"""`run analyze-failures` end to end: the real CLI parser and run command, the scripted Gemini server, the
fake GitLab (read through a tiny test data source), and a real Podman sandbox; then --resume."""

from __future__ import annotations

import io
import json
import tarfile
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import requests

from hummingbird_agent.cli import build_parser
from hummingbird_agent.cli.run import build_request, execute, report
from hummingbird_agent.config.loading import LoadedConfig, load_config
from hummingbird_agent.models import build_model
from hummingbird_agent.tools import StreamingResponse, ToolDef, ToolRegistry
from tests.servers.gemini import GeminiServer, function_call_turn, model_turn, text_turn
from tests.servers.gitlab import GitLabServer

pytestmark = [pytest.mark.podman, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
LOG = "".join(f"[{i:05d}] compiling module_{i}.c\n" for i in range(5000)) + "error: undefined reference to `frob`\n"
NOTE = "### Pipeline failure analysis for !7\nThe `unit-tests` job failed: undefined reference to `frob`."
SHORT_LOG = "short log\nerror: exit 1\n"
SOURCE_NOTES = "Test GitLab source: get_mr for MR details, get_job_log for a job's log."


def gitlab_tools(base: str, token: str, project: str) -> list[ToolDef]:
    session = requests.Session()
    session.headers["PRIVATE-TOKEN"] = token
    api = f"{base}/api/v4/projects/{requests.utils.quote(project, safe='')}"

    def get_mr(iid: int) -> dict[str, Any]:
        mr = session.get(f"{api}/merge_requests/{iid}", timeout=10).json()
        return {k: mr[k] for k in ("iid", "title", "sha", "web_url")}

    def get_job_log(job: int) -> StreamingResponse:
        resp = session.get(f"{api}/jobs/{job}/trace", stream=True, timeout=10)
        resp.raise_for_status()
        return StreamingResponse(resp.iter_content(65536), suffix=".log", metadata={"job_url": f"{base}/jobs/{job}"})

    int_arg = {"type": "integer"}
    return [
        ToolDef("get_mr", "MR details", {"type": "object", "properties": {"iid": int_arg}, "required": ["iid"]},
                get_mr),
        ToolDef("get_job_log", "a job's log", {"type": "object", "properties": {"job": int_arg}, "required": ["job"]},
                get_job_log),
    ]


def register(gitlab: GitLabServer, registry: ToolRegistry, loaded: LoadedConfig, workflow: str,
             project: str) -> None:
    token = loaded.secret("GITLAB_READ_TOKEN") or ""
    registry.register_data_source("gitlab", gitlab_tools(gitlab.url, token, "group/project"), SOURCE_NOTES,
                                  {"gitlab_url": gitlab.url})


@pytest.fixture
def loaded(tmp_path: Path, gemini_server: GeminiServer) -> LoadedConfig:
    config = {
        "model": {"provider": "gemini", "api_key_env": "GEMINI_API_KEY", "base_url": gemini_server.url},
        "sandbox": {"backend": "podman"},
        "workflows": {"analyze-failures": {
            "description": "analyse", "prompt": str(REPO / "workflows/analyze-failures.md"), "max_iterations": 5,
            "data_sources": {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}},
        }},
    }
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))
    return load_config(path, {"GEMINI_API_KEY": "test-key", "GITLAB_READ_TOKEN": "read-token"})


@pytest.fixture
def gitlab(gitlab_server: GitLabServer) -> GitLabServer:
    gitlab_server.add_project(1, "group/project")
    gitlab_server.add_mr(1, 7, title="Add frob")
    gitlab_server.add_job(1, 501, trace=LOG)
    gitlab_server.add_job(1, 502, trace=SHORT_LOG)
    return gitlab_server


async def run_cli(loaded: LoadedConfig, gitlab: GitLabServer, *argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(["run", "analyze-failures", "--project", "group/project", "--mr", "7", *argv])
    out, err = io.StringIO(), io.StringIO()
    outcome = await execute(loaded, build_request(args), build_model(loaded), args.save_session,
                            partial(register, gitlab), out=out, err=err)
    code = report(outcome, err)
    return code, out.getvalue(), err.getvalue()


def response_of(body: dict[str, Any], index: int) -> dict[str, Any]:
    return body["contents"][index]["parts"][0]["functionResponse"]["response"]


async def test_run_then_resume(loaded: LoadedConfig, gitlab: GitLabServer, gemini_server: GeminiServer,
                               tmp_path: Path) -> None:
    gemini_server.script(
        function_call_turn("get_mr", {"iid": 7}),
        function_call_turn("get_job_log", {"job": 501}),
        function_call_turn("fetch_to_sandbox", {"tool": "get_job_log", "args": {"job": 502}, "path": "logs/502.log"}),
        function_call_turn("sandbox_exec", {"command": "grep -h error: _out/get_job_log-1.log logs/502.log"}),
        text_turn(NOTE),
    )
    code, out, err = await run_cli(loaded, gitlab, "--pipeline", "99", "--save-session", str(tmp_path / "s1"))
    assert code == 0 and out.startswith(NOTE + "\n\n<details><summary>What I looked at</summary>")
    looked_at = out[out.index("<details>"):out.index("</details>")]
    assert [line.split("`")[1] for line in looked_at.splitlines() if line[:1].isdigit()] == [
        "get_mr", "get_job_log", "fetch_to_sandbox", "sandbox_exec"]
    assert f"job=`501` → {len(LOG) / 1024:.1f} KB, spilled to the sandbox" in looked_at
    assert "args.job=`502` path=`logs/502.log`" in looked_at
    assert "· gemini/" in out and "· 5/5 iterations" in out and "read-token" not in out
    assert [line.split(":")[0] for line in err.splitlines()] == [f"iteration {i}/5" for i in range(1, 6)]
    assert "tools get_job_log; tokens so far" in err.splitlines()[1]

    calls = [c.body for c in gemini_server.generate_calls]
    system = calls[0]["systemInstruction"]["parts"][0]["text"]
    positions = [system.index(s) for s in ("You are Hummingbird", SOURCE_NOTES, "# Analyze merge-request pipeline")]
    assert positions == sorted(positions)
    assert json.loads(calls[0]["contents"][0]["parts"][0]["text"]) == {
        "project": "group/project", "iid": 7, "workflow": "analyze-failures", "pipeline_id": 99}
    assert response_of(calls[1], 2)["result"]["title"] == "Add frob"

    spilled = response_of(calls[2], 4)
    assert spilled["result"]["spilled_to"] == "/tmp/data/_out/get_job_log-1.log"
    assert spilled["result"]["size_bytes"] == len(LOG) > 100_000
    assert spilled["result"]["preview"].rstrip().endswith("error: undefined reference to `frob`")
    assert "compiling module_2500.c" not in json.dumps(calls[2])  # the body's middle never reaches the model
    assert len(json.dumps(calls[2])) < len(json.dumps(calls[1])) + 8_000
    assert spilled["metadata"] == {"gitlab_url": gitlab.url, "job_url": f"{gitlab.url}/jobs/501"}

    assert response_of(calls[3], 6)["result"]["path"] == "/tmp/data/logs/502.log"
    assert "## Budget warning" in calls[3]["systemInstruction"]["parts"][0]["text"]  # iteration 4 of 5
    assert response_of(calls[4], 8)["result"]["stdout"] == "error: undefined reference to `frob`\nerror: exit 1\n"
    assert calls[4]["toolConfig"]["functionCallingConfig"]["mode"] == "NONE"
    assert calls[4]["systemInstruction"]["parts"][0]["text"].endswith(
        "state\nplainly which parts could not be investigated.")
    assert all("read-token" not in json.dumps(body) for body in calls)

    saved = tmp_path / "s1"
    context = json.loads((saved / "context.json").read_text())
    assert context["contents"][-1] == {"role": "model", "parts": [{"text": NOTE}]}
    assert "## System prompt" in (saved / "transcript.md").read_text()
    with tarfile.open(saved / "sandbox.tar.gz") as tar:
        assert "data/logs/502.log" in tar.getnames()

    gemini_server.script(
        function_call_turn("sandbox_exec", {"command": "wc -c < logs/502.log; ls _out"}),
        model_turn({"text": "The log is still there."}),
    )
    code, out, err = await run_cli(loaded, gitlab, "--resume", str(saved), "--message", "Is the log still there?",
                                   "--save-session", str(tmp_path / "s2"))
    assert code == 0 and out.startswith("The log is still there.\n\n<details>")
    assert f"session `{context['session_id']}`" in out
    first, second = (c.body for c in gemini_server.generate_calls[5:])
    assert first["contents"][:-1] == calls[4]["contents"] + [{"role": "model", "parts": [{"text": NOTE}]}]
    assert first["contents"][-1] == {"role": "user", "parts": [{"text": "Is the log still there?"}]}
    assert "## This is a follow-up" in first["systemInstruction"]["parts"][0]["text"]
    assert "## Budget warning" not in first["systemInstruction"]["parts"][0]["text"]  # fresh budget
    listing = response_of(second, len(second["contents"]) - 1)["result"]["stdout"]
    assert listing == f"{len(SHORT_LOG)}\nget_job_log-1.log\n"
    resumed = json.loads((tmp_path / "s2" / "context.json").read_text())
    assert resumed["session_id"] == context["session_id"]
