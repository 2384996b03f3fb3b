"""The triage over the fake GitLab: its read tools with the read token, as a workflow declares them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

import pytest

from hummingbird_agent.data_sources import gitlab as gitlab_source
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.triage.model import KnownCauses, Triage, TriageLimits
from hummingbird_agent.triage.reader import TriageCache, TriageReader
from hummingbird_agent.triage.run import TriageRequest, triage
from tests.servers.gitlab import GitLabServer
from tests.triage.world import CiWorld

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


@pytest.fixture
def world(gitlab_server: GitLabServer) -> CiWorld:
    return CiWorld(gitlab_server)


async def run_triage(gl: GitLabServer, iid: int, *, project: str = "group/project", cache: TriageCache | None = None,
                     known: KnownCauses | None = None, pipeline_id: int | None = None,
                     limits: TriageLimits | None = None, sha: str = "") -> tuple[Triage, TriageReader]:
    tools = ReadTools()
    gitlab_source.register(cast(ToolRegistry, tools), gl.url, gl.read_token)
    reader = TriageReader(tools, project, cache or TriageCache(), limits)
    found = await triage(reader, TriageRequest(project, iid, NOW, sha=sha, pipeline_id=pipeline_id), known)
    return found, reader


def failing_log(test: str, error: str, run: int = 1) -> str:
    """A GitLab job log of a failing pytest run; `run` changes only what differs between runs of one failure."""
    return "\n".join([
        f"Running with gitlab-runner 17.{run}.0 (abc{run:04d}ef)",
        "Using Docker executor with image python:3.12 ...",
        f"Getting source from Git repository 2026-01-0{run % 9 + 1}T10:00:{run % 60:02d}Z",
        "$ pip install -e .[dev]",
        f"Successfully installed hummingbird-0.{run}.0",
        "$ pytest -q",
        "..........F.....",
        "=================================== FAILURES ===================================",
        f"___________________________________ {test} ___________________________________",
        f"E       {error}",
        f"tests/test_core.py:{40 + run % 3}: {error.split(':')[0]}",
        "=========================== short test summary info ============================",
        f"FAILED tests/test_core.py::{test} - {error}",
        f"1 failed, {100 + run} passed in {run}.{run}2s",
        "Cleaning up project directory and file based variables",
        "ERROR: Job failed: exit code 1",
    ])


GENERIC_LOG = "$ ./ci.sh\nsomething went wrong\nERROR: Job failed: exit code 1"
