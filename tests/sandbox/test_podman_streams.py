"""The Podman backend's streams, run for real: a stream's bytes go through a pipe handed to the command itself."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import SandboxError
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.sandbox.podman import check_podman

pytestmark = [pytest.mark.podman, pytest.mark.asyncio(loop_scope="module")]

MiB = 1024 * 1024
CONFIG = SandboxConfig(memory_bytes=512 * MiB, workdir_bytes=128 * MiB, pids_limit=64)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sbx() -> AsyncIterator[PodmanSandbox]:
    await check_podman(CONFIG)
    async with PodmanSandbox(CONFIG, session_id="streams") as box:
        yield box


def fd_targets(listing: str) -> dict[str, str]:
    """`ls -l /proc/PID/fd` as {fd: target}."""
    return {line.split()[-3]: line.split()[-1] for line in listing.splitlines() if " -> " in line}


async def test_a_streamed_command_gets_the_stream_as_stdin_and_no_other_descriptor(sbx: PodmanSandbox) -> None:
    result = await sbx.stream_exec("ls -l /proc/$$/fd; cat", [b"first ", b"second\n"], 30)
    assert result.exit_code == 0, result
    listing, _, echoed = result.stdout.decode().partition("\n0")
    fds = fd_targets(listing + "\n0" + echoed.split("\n", 1)[0])
    assert sorted(fds) == ["0", "1", "2"]
    assert fds["0"].startswith("pipe:")
    assert result.stdout.endswith(b"first second\n")


async def test_a_file_read_gets_only_its_stream_as_stdout(sbx: PodmanSandbox) -> None:
    async with sbx.command_slot() as open_channel:
        channel = await open_channel(["sh", "-c", "ls -l /proc/$$/fd"], False, True)
        listing = b""
        while chunk := await channel.read_stdout():
            listing += chunk
        assert await channel.wait() == 0
    fds = fd_targets(listing.decode())
    assert sorted(fds) == ["0", "1", "2"] and fds["0"] == "/dev/null" and fds["1"].startswith("pipe:")


async def test_a_command_that_stops_reading_its_stream_ends_the_write(sbx: PodmanSandbox) -> None:
    result = await sbx.stream_exec("head -c 10", (b"x" * 65536 for _ in range(800)), 30)
    assert result.exit_code == 0 and result.stdout == b"x" * 10 and not result.timed_out


async def test_a_read_abandoned_half_way_leaves_the_box_usable(sbx: PodmanSandbox) -> None:
    await sbx.write_file("/tmp/data/big", (b"y" * MiB for _ in range(16)))
    async for _ in sbx.read_file_iter("/tmp/data/big"):
        break
    # The abandoned reader is killed, not waited for: on a busy machine it may take a moment to go; it must go.
    result = await sbx.exec("for i in $(seq 50); do ps -eo args= | grep -q '^cat' || break; sleep 0.2; done; "
                            "ps -eo args= | grep -c '^cat' || true", 30)
    assert result.stdout.strip() == b"0"
    size = 0
    async for chunk in sbx.read_file_iter("/tmp/data/big"):
        size += len(chunk)
    assert size == 16 * MiB


async def test_a_failed_read_is_a_sandbox_error_with_the_command_s_message(sbx: PodmanSandbox) -> None:
    with pytest.raises(SandboxError, match="No such file"):
        async for _ in sbx.read_file_iter("/tmp/data/missing"):
            pass
