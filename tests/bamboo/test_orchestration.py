"""Generated orchestration code in the real Podman sandbox: the tool channel, its caps, and security."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.explore.orchestration import ToolGate, run_orchestration
from hummingbird_agent.bamboo.mcp import BuiltinMcpClient
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools import ToolDef
from tests.bamboo.sandboxes import box

__all__ = ["box"]
pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]
OBJ = {"type": "object", "properties": {}, "additionalProperties": True}
TOKEN = "glpat-SECRET-never-in-the-sandbox"


class World:
    """Host-side tools: two reads and one state-changing write whose effect is observable."""

    def __init__(self) -> None:
        self.posted: list[str] = []

    def tools(self) -> list[ToolDef]:
        def get_job(job_id: int) -> dict:
            return {"id": job_id, "status": "failed", "runner": f"r{job_id % 3}"}

        def get_log(job_id: int) -> str:
            return f"job {job_id}: npm ERR! code ETIMEDOUT\n" * 3

        def big(n: int) -> str:
            return "x" * n

        def post_note(body: str) -> str:
            self.posted.append(body)
            return "posted"

        int_arg = {"type": "object", "properties": {"job_id": {"type": "integer"}}, "required": ["job_id"]}
        return [ToolDef("get_job", "A CI job.", int_arg, get_job),
                ToolDef("get_log", "A CI job log.", int_arg, get_log),
                ToolDef("big", "n bytes.", {"type": "object", "properties": {"n": {"type": "integer"}}}, big),
                ToolDef("post_note", "Post a note (writes).", {"type": "object", "properties": {
                    "body": {"type": "string"}}}, post_note, read_only=False)]

    def gate(self, **caps: int) -> ToolGate:
        client = BuiltinMcpClient(self.tools())
        allowed = frozenset(t.name for t in client.list_tools() if t.read_only)
        return ToolGate(client, lambda: allowed, **caps)


async def run(box: PodmanSandbox, code: str, world: World | None = None, timeout_s: float = 30, **caps: int):
    world = world or World()
    return await run_orchestration(box, code, {"project": "g/app", "job": 7}, world.gate(**caps), timeout_s)


async def test_dependent_and_gathered_calls_return_the_dict(box: PodmanSandbox) -> None:
    code = """
job = await tools.get_job(job_id=task["job"])
logs = await asyncio.gather(*(tools.get_log(job_id=j) for j in (1, 2, 3)))
return {"job": job, "first_log_line": logs[0].splitlines()[0], "n": len(logs)}
"""
    outcome = await run(box, code)
    assert outcome.error == ""
    assert outcome.value == {"job": {"id": 7, "status": "failed", "runner": "r1"},
                             "first_log_line": "job 1: npm ERR! code ETIMEDOUT", "n": 3}
    assert [c.tool for c in outcome.calls].count("get_log") == 3 and all(c.ok for c in outcome.calls)


@pytest.mark.parametrize(("code", "error"), [
    ("return {'a': 1", "SyntaxError"),
    ("x = {}['missing']\nreturn {}", "KeyError"),
    ("return [1, 2]", "not a dict"),
])
async def test_syntax_runtime_and_non_dict_give_empty_and_a_warning(
        box: PodmanSandbox, code: str, error: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        outcome = await run(box, code)
    assert outcome.value == {} and error in outcome.error
    assert "orchestration code failed; no results this round" in caplog.text


async def test_endless_loop_stops_at_the_timeout_and_the_box_stays_usable(box: PodmanSandbox) -> None:
    started = time.monotonic()
    outcome = await run(box, "while True:\n    pass", timeout_s=3)
    assert outcome.value == {} and "timed out" in outcome.error
    assert time.monotonic() - started < 10
    assert (await run(box, "return {'ok': True}")).value == {"ok": True}
    ps = await box.exec("ps -eo args", 10)
    assert b"_fn(tools" not in ps.stdout and b"python3 -I" not in ps.stdout


async def test_a_failing_tool_gives_none_and_the_code_goes_on(box: PodmanSandbox,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        outcome = await run(box, "a = await tools.get_job(job_id='x')\nb = await tools.get_job(job_id=2)\n"
                                 "return {'a': a, 'b': b['status']}")
    assert outcome.value == {"a": None, "b": "failed"}
    assert "orchestration tool failed tool=get_job" in caplog.text


async def test_call_and_result_caps(box: PodmanSandbox) -> None:
    code = ("r = []\nfor i in range(5):\n    try:\n        r.append((await tools.get_job(job_id=i))['id'])"
            "\n    except Exception as e:\n        r.append(str(e))\nreturn {'r': r}")
    outcome = await run(box, code, max_calls=3)
    assert outcome.value["r"][:3] == [0, 1, 2] and "call budget of 3 exhausted" in outcome.value["r"][3]
    outcome = await run(box, "return {'v': await tools.big(n=5000)}", result_max_bytes=100)
    assert outcome.value["v"] == {"truncated": True, "preview": "x" * 100}


@pytest.mark.parametrize("code", [
    "await tools.post_note(body='hi')\nreturn {}",
    "f = tools.post_note\nawait f(body='hi')\nreturn {}",
    "f = getattr(tools, 'post_' + 'note')\nawait f(body='hi')\nreturn {}",
    "t = tools\nalias = {'x': t.__getattr__('post_note')}\nawait alias['x'](body='hi')\nreturn {}",
])
async def test_state_changing_tool_is_refused_directly_or_through_an_alias(
        box: PodmanSandbox, code: str, caplog: pytest.LogCaptureFixture) -> None:
    world = World()
    with caplog.at_level(logging.WARNING):
        outcome = await run(box, code, world)
    assert world.posted == []
    assert outcome.value == {} and "ToolRefused" in outcome.error
    assert "orchestration refused tool=post_note reason=not an allowed (read-only) tool" in caplog.text


async def test_forged_protocol_line_is_checked_like_any_call(box: PodmanSandbox,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    # The code writes a raw call request to every open fd, hoping one is the protocol channel.
    code = """
import os, json
line = (json.dumps({"op": "call", "id": 1, "tool": "post_note", "args": {"body": "forged"}}) + "\\n").encode()
for fd in range(3, 20):
    try:
        os.write(fd, line)
    except OSError:
        pass
await asyncio.sleep(1)
return {}
"""
    world = World()
    with caplog.at_level(logging.WARNING):
        await run(box, code, world)
    assert world.posted == []


async def test_no_network(box: PodmanSandbox) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    port = server.getsockname()[1]
    try:
        outcome = await run(box, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                                 "return {'connected': True}")
        assert outcome.value == {} and "Error" in outcome.error
        with pytest.raises(BlockingIOError):
            server.accept()
        outcome = await run(box, "import urllib.request\nurllib.request.urlopen('http://example.com', timeout=2)\n"
                                 "return {}")
        assert outcome.value == {}
    finally:
        server.close()


async def test_no_host_files_and_no_tokens_in_the_sandbox(box: PodmanSandbox, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    secret_file = tmp_path / "token.txt"
    secret_file.write_text(TOKEN)
    monkeypatch.setenv("HUMMINGBIRD_GITLAB_TOKEN", TOKEN)
    outcome = await run(box, f"return {{'t': open({str(secret_file)!r}).read()}}")
    assert outcome.value == {} and "FileNotFoundError" in outcome.error
    outcome = await run(box, "import os\nreturn {'t': os.environ['HUMMINGBIRD_GITLAB_TOKEN']}")
    assert outcome.value == {} and "KeyError" in outcome.error
    # Everything any process in the box can see: its own environment, every /proc/*/environ and cmdline.
    code = """
import os, glob
seen = {"env": dict(os.environ)}
for path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
    try:
        seen[path] = open(path, "rb").read().decode(errors="replace")
    except OSError:
        pass
return seen
"""
    outcome = await run(box, code)
    assert outcome.error == "" and outcome.value["env"]
    dump = json.dumps(outcome.value)
    assert TOKEN not in dump and "HUMMINGBIRD_GITLAB_TOKEN" not in dump
    assert not any(value and value in dump for name, value in os.environ.items()
                   if "TOKEN" in name or "KEY" in name or "SECRET" in name)
