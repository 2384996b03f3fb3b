"""The channel to a box's command server, and how it fails: the box dying mid-command, a command flooding
its output, a malformed message either way. Each is one clear line, never a hang, and the next box works. No
command reaches the server's descriptors to forge another command's result."""

from __future__ import annotations

import asyncio
import os
import shlex
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import SandboxError
from hummingbird_agent.sandbox import PodmanSandbox, _wire
from hummingbird_agent.sandbox._link_pipes import PipeLink, socket_pair
from hummingbird_agent.sandbox.podman import check_podman

pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]

MiB = 1024 * 1024
CONFIG = SandboxConfig(memory_bytes=256 * MiB, workdir_bytes=64 * MiB, pids_limit=64)
# Only a guard against a hang: every case here ends in well under a second when it works.
NO_HANG_S = 60


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sbx() -> AsyncIterator[PodmanSandbox]:
    await check_podman(CONFIG)
    async with PodmanSandbox(CONFIG, session_id="channel") as box:
        yield box


async def podman(*args: str) -> int:
    proc = await asyncio.create_subprocess_exec("podman", *args, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.DEVNULL)
    return await proc.wait()


async def assert_a_new_box_works() -> None:
    async with PodmanSandbox(CONFIG) as fresh:
        assert (await fresh.exec("echo ok", 30)).stdout == b"ok\n"


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert text and "\n" not in text and "Traceback" not in text
    return text


async def test_the_box_dying_mid_command_is_one_line_and_the_next_box_works() -> None:
    box = PodmanSandbox(CONFIG)
    async with box:
        running = asyncio.ensure_future(box.exec("echo started; sleep 50", 120))
        await asyncio.sleep(0.5)
        assert await podman("kill", box.name) == 0
        async with asyncio.timeout(NO_HANG_S):
            with pytest.raises(SandboxError) as died:
                await running
            with pytest.raises(SandboxError) as after:
                await box.exec("echo again", 30)
    assert "closed its channel" in one_line(died.value)
    assert box.name in one_line(after.value)
    await assert_a_new_box_works()


async def test_a_flood_on_stdout_or_stderr_is_capped_and_ends_at_its_timeout(sbx: PodmanSandbox) -> None:
    async with asyncio.timeout(NO_HANG_S):
        out = await sbx.exec("cat /dev/zero", 2)
        err = await sbx.exec("cat /dev/zero >&2", 2)
    assert out.timed_out and out.stdout_truncated and len(out.stdout) == budgets.SANDBOX_STDOUT_CAP_BYTES
    assert err.timed_out and err.stderr_truncated and len(err.stderr) == budgets.SANDBOX_STDERR_CAP_BYTES
    assert (await sbx.exec("echo alive", 30)).stdout == b"alive\n"


async def test_a_background_flood_holding_the_pipe_does_not_hold_the_command(sbx: PodmanSandbox) -> None:
    async with asyncio.timeout(NO_HANG_S):
        result = await sbx.exec("(yes &); echo done >&2", 30)
    # `yes` may report its broken pipe (once its output is no longer read) before stderr is read to its end.
    assert result.exit_code == 0 and not result.timed_out and result.stderr.startswith(b"done\n")
    assert b"yes" not in (await sbx.exec("ps -eo args", 30)).stdout


async def test_a_malformed_request_is_refused_by_the_box_in_one_line(sbx: PodmanSandbox) -> None:
    box = PodmanSandbox(CONFIG)
    async with box:
        link = box._link
        assert link is not None
        await link._send_frame(_wire.encode(99, 1, b"nonsense"))
        async with asyncio.timeout(NO_HANG_S):
            with pytest.raises(SandboxError) as refused:
                await box.exec("echo never", 30)
    assert "malformed request" in one_line(refused.value) or "closed its channel" in one_line(refused.value)
    await assert_a_new_box_works()


# What a broken or hostile box could send instead of an exit code.
MALFORMED = {
    "unknown kind": _wire.HEADER.pack(77, 1, 0),
    "oversized frame": _wire.HEADER.pack(_wire.EXIT, 1, budgets.SANDBOX_FRAME_MAX_BYTES + 1),
    "exit not JSON": _wire.encode(_wire.EXIT, 1, b"\xff{"),
    "exit without a code": _wire.encode(_wire.EXIT, 1, b'{"code": "zero"}'),
    "output on a pipe channel": _wire.encode(_wire.OUT, 1, b"sneaky"),
}


@pytest.mark.parametrize("garbage", MALFORMED.values(), ids=MALFORMED.keys())
async def test_a_malformed_message_from_the_box_fails_its_commands_in_one_line(garbage: bytes) -> None:
    host, box_end = socket_pair()
    link = PipeLink("hb-sandbox-fake", host)
    box_end.sendall(_wire.encode(_wire.HELLO, 0))
    await link.open()
    try:
        command = await link.spawn(["true"], False, 0.0)
        box_end.setblocking(False)
        request, fds, _, _ = socket.recv_fds(box_end, 65536, 3)
        for fd in fds:
            os.close(fd)
        assert request[:1] == bytes([_wire.SPAWN]) and len(fds) == 2
        box_end.sendall(garbage)
        async with asyncio.timeout(NO_HANG_S):
            with pytest.raises(SandboxError) as broken:
                await command.wait()
            await command.abort()
        with pytest.raises(SandboxError):
            await link.spawn(["true"], False, 0.0)
        assert "malformed message from the box" in one_line(broken.value)
    finally:
        await link.close()
        box_end.close()
    await assert_a_new_box_works()


# A command that looks for the command server (an argv ending in sandbox-init) and, through /proc/<pid>/fd, reads
# and writes each of its descriptors it can open, writing frames that report "all tests passed" and exit 0 for
# every command id a box hands out first. It prints how many descriptors it reached.
FORGER = r"""
import os, struct
def server(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return any(a.endswith(b"sandbox-init") for a in f.read().split(b"\0"))
    except OSError:
        return False
def forge(fd):
    for ident in range(1, 64):
        out, code = b"all tests passed\n", b'{"code": 0}'
        for kind, payload in ((18, out), (16, code)):
            try:
                os.write(fd, struct.pack("!BII", kind, ident, len(payload)) + payload)
            except OSError:
                pass
reached, servers = [], [p for p in os.listdir("/proc") if p.isdigit() and server(p)]
for pid in servers:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        fds = [str(n) for n in range(32)]
    for name in fds:
        for mode in (os.O_WRONLY, os.O_RDONLY):
            try:
                fd = os.open(f"/proc/{pid}/fd/{name}", mode | os.O_NONBLOCK)
            except OSError:
                continue
            reached.append(f"{pid}/{name}")
            forge(fd) if mode == os.O_WRONLY else None
            os.close(fd)
print("servers", len(servers), "reached", len(reached), *reached)
"""


async def assert_no_command_forges_another(box: Any) -> None:
    """A command running beside another tries the server's descriptors: it reaches none, and the other command's
    exit code and output are its own."""
    victim = asyncio.ensure_future(box.exec("sleep 2; echo real output; exit 7", 60))
    await asyncio.sleep(0.5)
    forger = await box.exec(f"python3 -c {shlex.quote(FORGER)}", 30)
    result = await victim
    assert forger.exit_code == 0, forger
    servers, reached = forger.stdout.split()[1], forger.stdout.split()[3]
    assert servers != b"0" and reached == b"0", forger.stdout
    assert (result.exit_code, result.stdout) == (7, b"real output\n")


async def test_no_command_reaches_the_servers_descriptors(sbx: PodmanSandbox) -> None:
    await assert_no_command_forges_another(sbx)
