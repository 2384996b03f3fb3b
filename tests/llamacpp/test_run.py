"""A short `run analyze-failures` on llama.cpp's server with the real small model, against the fake GitLab:
the note cites the failing job's log, or its first line says that no data was read; it never links to a job
the run did not see."""

from __future__ import annotations

import io
import json
import re
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import requests

from hummingbird_agent.agent.report import NO_DATA_LINE
from hummingbird_agent.cli import build_parser
from hummingbird_agent.cli.run import build_request, execute, report
from hummingbird_agent.config.loading import LoadedConfig, load_config
from hummingbird_agent.models import build_model
from hummingbird_agent.tools import ToolDef, ToolRegistry
from tests.servers.gitlab import GitLabServer
from tests.servers.llamacpp import MODEL_NAME, LlamaCppServer

pytestmark = [pytest.mark.llamacpp, pytest.mark.podman, pytest.mark.timeout(900)]

LOG = "$ make test\ncc -o app main.c\nmain.c:12: error: undefined reference to `frob`\nERROR: Job failed: exit code 1\n"
# Short, so that a run on two shared cores stays within minutes (the real workflow prompt is ~1,200 tokens).
PROMPT = """# Analyze a failed pipeline
The failed job of this pipeline is job 502. First read its log: your first reply is exactly the tool call
{"name": "get_job_log", "arguments": {"job": 502}}
When the log has been returned to you, write a short note: which job failed, the error line from its log,
and the job's `web_url`."""


def register(gitlab: GitLabServer, registry: ToolRegistry, loaded: LoadedConfig, workflow: str, project: str) -> None:
    def get_job_log(job: int) -> dict[str, Any]:
        resp = requests.get(f"{gitlab.url}/api/v4/projects/1/jobs/{job}/trace",
                            headers={"PRIVATE-TOKEN": "read-token"}, timeout=10)
        if resp.status_code == 404:
            return {"error": f"job {job} not found"}
        return {"job": job, "web_url": f"{gitlab.url}/group/project/-/jobs/{job}", "log": resp.text}

    params = {"type": "object", "properties": {"job": {"type": "integer"}}, "required": ["job"]}
    registry.register_data_source("gitlab", [ToolDef("get_job_log", "Log and web URL of a CI job", params,
                                                     get_job_log)])


@pytest.fixture
def loaded(tmp_path: Path, llamacpp: LlamaCppServer) -> LoadedConfig:
    (tmp_path / "prompt.md").write_text(PROMPT)
    config = {
        # A self-hosted endpoint: the 2048-token default cap, lowered here; text tool calls are read.
        "model": {"provider": "openai", "base_url": f"{llamacpp.url}/v1", "name": MODEL_NAME,
                  "max_output_tokens": 192},
        "sandbox": {"backend": "podman"},
        "workflows": {"analyze-failures": {"description": "analyse", "prompt": "prompt.md", "max_iterations": 3,
                                           "require_data": True,
                                           "data_sources": {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}}}},
    }
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    return load_config(tmp_path / "config.yaml", {"GITLAB_READ_TOKEN": "read-token"})


async def test_a_short_analysis_cites_the_log_or_says_no_data_was_read(
        loaded: LoadedConfig, gitlab_server: GitLabServer) -> None:
    gitlab_server.add_project(1, "group/project")
    gitlab_server.add_job(1, 502, trace=LOG)
    args = build_parser().parse_args(["run", "analyze-failures", "--project", "group/project", "--mr", "7",
                                      "--pipeline", "99"])
    out, err = io.StringIO(), io.StringIO()
    outcome = await execute(loaded, build_request(args), build_model(loaded), None, partial(register, gitlab_server),
                            out=out, err=err)
    note = out.getvalue()
    print(note, err.getvalue(), sep="\n")  # what the model wrote, for the test log
    assert report(outcome, io.StringIO()) in (0, 1)
    read_log = any(c.tool == "get_job_log" and c.error_kind is None for c in outcome.result.calls)
    assert read_log or note.splitlines()[0] == NO_DATA_LINE
    if read_log and outcome.result.status == "completed":
        answer = note[:note.index("<details>")]
        assert "502" in answer or "frob" in answer or "undefined reference" in answer
    for url in re.findall(r"https?://[^\s)\]>`]+/jobs/(\d+)", note):
        assert url == "502"  # the only job the run saw
