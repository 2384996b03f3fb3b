"""sandbox_exec, fetch_to_sandbox and fetch_batch_to_sandbox against a real sandbox."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools import Spiller, StreamingResponse, ToolDef, ToolRegistry, register_sandbox_tools
from tests.tools.conftest import read_file

pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]

LOG_SCHEMA = {"type": "object", "properties": {"job": {"type": "integer"}}, "required": ["job"]}
BIG_LOG = b"".join(b"step %d ok\n" % i for i in range(20_000)) + b"error: tests failed\n"


def job_log(job: int) -> StreamingResponse:
    if job == 404:
        raise LookupError("job 404 not found")
    meta: dict[str, Any] = {}

    def chunks():  # type: ignore[no-untyped-def]
        for start in range(0, len(BIG_LOG), 10_000):
            yield BIG_LOG[start : start + 10_000]
        meta["job_url"] = f"https://gitlab.example/jobs/{job}"

    return StreamingResponse(chunks(), suffix=".log", metadata=meta)


def make_registry(sandbox: PodmanSandbox) -> ToolRegistry:
    registry = ToolRegistry(Spiller(sandbox))
    register_sandbox_tools(registry)
    registry.register_data_source(
        "ci",
        [ToolDef("get_job_log", "a job log", LOG_SCHEMA, job_log), ToolDef("get_mr", "MR", {}, lambda: {"iid": 1})],
        response_metadata={"web": "https://gitlab.example"},
    )
    return registry


async def test_exec_small_output_is_inline(sandbox: PodmanSandbox) -> None:
    result = await make_registry(sandbox).execute("sandbox_exec", {"command": "echo hi; echo oops >&2; exit 3"})
    assert result.ok and result.content == {"exit_code": 3, "stdout": "hi\n", "stderr": "oops\n"}


async def test_exec_spills_each_large_stream_on_its_own(sandbox: PodmanSandbox) -> None:
    command = "seq 1 20000; echo short-error >&2"
    result = await make_registry(sandbox).execute("sandbox_exec", {"command": command})
    content = result.content
    assert isinstance(content, dict) and content["stderr"] == "short-error\n"
    spilled = content["stdout"]
    assert spilled["spilled_to"].endswith(".stdout.txt") and spilled["lines"] == 20_000
    assert (await read_file(sandbox, spilled["spilled_to"])).decode().split() == [str(i) for i in range(1, 20_001)]
    assert len(json.dumps(result.to_response())) < budgets.SPILL_THRESHOLD_BYTES


async def test_exec_timeout_is_reported(sandbox: PodmanSandbox) -> None:
    result = await make_registry(sandbox).execute("sandbox_exec", {"command": "sleep 5", "timeout_s": 0.5})
    assert isinstance(result.content, dict) and result.content["timed_out"] == "killed after 0.5 s"


async def test_fetch_streams_the_whole_output_into_the_file(sandbox: PodmanSandbox) -> None:
    args = {"tool": "get_job_log", "args": {"job": 7}, "path": "logs/job-7.log"}
    result = await make_registry(sandbox).execute("fetch_to_sandbox", args)
    assert result.ok, result
    content = result.content
    assert isinstance(content, dict) and content["path"] == "/tmp/data/logs/job-7.log"
    assert content["size_bytes"] == len(BIG_LOG) and content["lines"] == 20_001
    assert content["preview"].startswith("step 0 ok") and content["preview"].rstrip().endswith("error: tests failed")
    assert result.metadata == {"web": "https://gitlab.example", "job_url": "https://gitlab.example/jobs/7"}
    assert await read_file(sandbox, "/tmp/data/logs/job-7.log") == BIG_LOG


async def test_fetch_of_a_buffered_tool_writes_its_json(sandbox: PodmanSandbox) -> None:
    result = await make_registry(sandbox).execute("fetch_to_sandbox", {"tool": "get_mr", "args": {}, "path": "mr.json"})
    assert result.ok and json.loads(await read_file(sandbox, "/tmp/data/mr.json")) == {"iid": 1}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"tool": "get_job_log", "args": {"job": 1}, "path": "../../etc/passwd"}, "must name a file inside /tmp/data"),
        ({"tool": "sandbox_exec", "args": {"command": "id"}, "path": "x"}, "is not a data-source tool"),
        ({"tool": "get_job_log", "args": {"job": "x"}, "path": "x"}, "is not of type 'integer'"),
        ({"tool": "get_job_log", "args": {"job": 404}, "path": "x"}, "LookupError: job 404 not found"),
    ],
)
async def test_fetch_problems_are_error_results(sandbox: PodmanSandbox, args: dict[str, Any], message: str) -> None:
    result = await make_registry(sandbox).execute("fetch_to_sandbox", args)
    assert not result.ok and message in str(result.content)


async def test_batch_fetches_everything_and_reports_each_failure(sandbox: PodmanSandbox) -> None:
    requests = [{"tool": "get_job_log", "args": {"job": j}, "path": f"batch/{j}.log"} for j in (1, 404, 3)]
    result = await make_registry(sandbox).execute("fetch_batch_to_sandbox", {"requests": requests})
    content = result.content
    assert isinstance(content, dict) and content["fetched"] == 2 and content["failed"] == 1
    assert [("error" in r) for r in content["results"]] == [False, True, False]
    assert content["results"][1]["error"] == "get_job_log failed: LookupError: job 404 not found"
    listing = await sandbox.exec("ls batch", timeout_s=10)
    assert listing.stdout.decode().split() == ["1.log", "3.log"]
    assert len(json.dumps(result.to_response())) < budgets.SPILL_THRESHOLD_BYTES
