"""One running command inside a sandbox as a byte channel, and the capped collection of its output."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import AsyncIterable, Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from hummingbird_agent import budgets
from hummingbird_agent.sandbox.base import ByteChunks


class Channel(Protocol):
    """One command of a box: its pipes (Podman) or its streams relayed over the box's exec websocket (Kubernetes)."""

    async def write(self, data: bytes) -> None: ...

    async def close_stdin(self) -> None: ...

    async def read_stdout(self) -> bytes:
        """Up to STREAM_CHUNK_BYTES of stdout; b"" at end of stream."""

    async def read_stderr(self) -> bytes: ...

    async def wait(self) -> int:
        """Exit code of the command once it has ended."""

    async def abort(self) -> None:
        """Kill the command's process group and let go of its streams (what it left is swept separately)."""


@dataclass(slots=True)
class Captured:
    data: bytes
    truncated: bool


def timed_argv(command: str, timeout_s: float) -> list[str]:
    """argv running `command` under coreutils timeout, which SIGKILLs its whole process group."""
    return ["timeout", "-s", "KILL", f"{timeout_s:.3f}", "sh", "-c", command]


def write_command(path: str) -> str:
    return "cat > " + shlex.quote(path)


async def collect(read: Callable[[], Awaitable[bytes]], cap_bytes: int) -> Captured:
    """Read a stream to its end, keeping the first `cap_bytes`; the rest is drained and dropped."""
    parts: list[bytes] = []
    kept = 0
    truncated = False
    while chunk := await read():
        room = cap_bytes - kept
        if len(chunk) > room:
            truncated = True
            chunk = chunk[:room]
        if chunk:
            parts.append(chunk)
            kept += len(chunk)
    return Captured(b"".join(parts), truncated)


async def feed(channel: Channel, chunks: ByteChunks) -> None:
    """Write every chunk to stdin, then close it. Stops quietly if the command stopped reading."""
    try:
        if isinstance(chunks, AsyncIterable):
            async for chunk in chunks:
                await channel.write(chunk)
        else:
            for chunk in chunks:
                await channel.write(chunk)
                await asyncio.sleep(0)
    except (BrokenPipeError, ConnectionResetError):
        return
    await channel.close_stdin()


async def run_channel(channel: Channel, chunks: ByteChunks | None) -> tuple[int, Captured, Captured]:
    """Drive one command to completion: feed stdin, collect capped stdout/stderr, wait for the exit code."""
    out = asyncio.ensure_future(collect(channel.read_stdout, budgets.SANDBOX_STDOUT_CAP_BYTES))
    err = asyncio.ensure_future(collect(channel.read_stderr, budgets.SANDBOX_STDERR_CAP_BYTES))
    try:
        if chunks is not None:
            await feed(channel, chunks)
        stdout, stderr = await asyncio.gather(out, err)
        return await channel.wait(), stdout, stderr
    finally:
        out.cancel()
        err.cancel()
