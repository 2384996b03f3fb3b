"""The worker's warm sandbox pool, through the whole service on real Podman: every run its own container, the
later runs handed a ready one, and no container of the worker left once it stops."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.runner.harness import IID, PROJECT_ID, SHA, expect_turns, pipeline_event, seed_gitlab, start_service
from tests.servers import GeminiServer, GitLabServer, MotoServer
from tests.servers.gemini import function_call_turn, text_turn

pytestmark = [pytest.mark.podman, pytest.mark.timeout(300)]

RUNS = ((IID, SHA), (IID + 1, "b" * 40), (IID + 2, "c" * 40))


async def podman_names() -> set[str]:
    proc = await asyncio.create_subprocess_exec("podman", "ps", "-a", "--format", "{{.Names}}",
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    return set(out.decode().split())


def logged(log_path: Path, message: str) -> list[str]:
    """The `name` of every log record whose message starts with `message`."""
    records = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    return [r["msg"].split("name=")[1].split()[0] for r in records
            if r.get("msg", "").startswith(message) and "name=" in r["msg"]]


def final_notes(gitlab: GitLabServer, iid: int) -> list[str]:
    bot = gitlab.bot_user["id"]
    return [n["body"] for d in gitlab.discussions.get((PROJECT_ID, iid), []) for n in d["notes"]
            if n["author"]["id"] == bot and not n["body"].startswith("Running the workflow")]


async def test_each_run_gets_its_own_sandbox_and_a_stopped_worker_leaves_none(
    tmp_path: Path, gitlab_server: GitLabServer, moto_server: MotoServer,
) -> None:
    seed_gitlab(gitlab_server)
    for iid, sha in RUNS[1:]:
        gitlab_server.add_mr(PROJECT_ID, iid, sha=sha, title="Add frob")
    with GeminiServer() as model:
        async with start_service(tmp_path, gitlab_server, model, moto_server) as service:
            for number, (iid, sha) in enumerate(RUNS):
                # Each run writes a file and says whether a file of an earlier run is there.
                expect_turns(model, function_call_turn("sandbox_exec", {"command": f"ls; touch run-{number}"}),
                             text_turn(f"## Run {number}"))
                event = pipeline_event(pipeline_id=700 + number, sha=sha)
                event["merge_request"]["iid"] = iid
                service.publish(event)
                await service.wait_for(lambda iid=iid: len(final_notes(gitlab_server, iid)) == 1, f"note {iid}")
                await service.finished()
            outputs = [c.body["contents"][-1]["parts"][0]["functionResponse"]["response"]
                       for c in model.generate_calls if "functionResponse" in json.dumps(c.body["contents"][-1])]
            assert len(outputs) == len(RUNS)
            assert all("run-" not in json.dumps(output) for output in outputs)  # no run sees another's files
            started = logged(service.log_path, "sandbox started")
            taken = logged(service.log_path, "sandbox taken from the pool")
            pooled = logged(service.log_path, "sandbox pool started")
            assert len(set(started)) == len(started) == len(RUNS)  # one container per run
            assert taken and set(taken) <= set(pooled)  # the later runs found one ready
    assert (set(started) | set(pooled)) & await podman_names() == set()
