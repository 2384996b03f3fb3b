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
    """Transport of one command: a `podman exec` child process or a Kubernetes exec websocket."""

    async def write(self, data: bytes) -> None: ...

    async def close_stdin(self) -> None: ...

    async def read_stdout(self) -> bytes:
        """Up to STREAM_CHUNK_BYTES of stdout; b"" at end of stream."""

    async def read_stderr(self) -> bytes: ...

    async def wait(self) -> int:
        """Exit code of the command once it has ended."""

    async def abort(self) -> None:
        """Host-side kill of the exec session (the processes inside are swept separately)."""


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


# The byte a sweeping wrapper writes to stderr after `kill -KILL -1` and before its command starts.
SWEPT_MARK = b"\x1e"
# Killed processes hold their pids until PID 1 reaps them, and the pids limit counts them: right after a
# fork bomb the next command's own first fork (coreutils `timeout`) would fail. So the sweep waits, with
# shell builtins only (it cannot fork either), until /proc lists just PID 1 and itself, or a bounded time.
SWEEP_SCRIPT = ("kill -KILL -1 2>/dev/null; n() { c=$#; }; i=0; n /proc/[0-9]*; "
                f"while [ $c -gt 2 ] && [ $i -lt {budgets.SANDBOX_SWEEP_REAP_POLLS} ]; "
                "do i=$((i+1)); n /proc/[0-9]*; done")
_SWEEP_THEN_EXEC = SWEEP_SCRIPT + "; printf '\\036' >&2 && exec \"$@\""


def swept_argv(argv: list[str]) -> list[str]:
    """`argv` run by a shell that first kills every other process of the sandbox user (not PID 1, not itself)
    and marks stderr; the command runs only if the mark was written."""
    return ["sh", "-c", _SWEEP_THEN_EXEC, "sweep", *argv]


class _Replay:
    """A channel whose stderr starts with bytes already read from it (what followed the sweep mark)."""

    def __init__(self, channel: Channel, stderr_head: bytes) -> None:
        self._channel = channel
        self._head = stderr_head
        self.write, self.close_stdin = channel.write, channel.close_stdin
        self.read_stdout, self.wait, self.abort = channel.read_stdout, channel.wait, channel.abort

    async def read_stderr(self) -> bytes:
        head, self._head = self._head, b""
        return head or await self._channel.read_stderr()


async def confirm_swept(channel: Channel) -> Channel | None:
    """The channel of a `swept_argv` command once its sweep is done, or None (after aborting it) when the
    stream ended without the mark: the exec itself failed, so the command never ran."""
    seen = b""
    try:
        while SWEPT_MARK not in seen:
            chunk = await channel.read_stderr()
            if not chunk:
                await channel.abort()
                return None
            seen += chunk
            if len(seen) > budgets.SANDBOX_STDERR_CAP_BYTES:
                await channel.abort()
                return None
    except BaseException:
        await asyncio.shield(channel.abort())
        raise
    before, _, after = seen.partition(SWEPT_MARK)
    return _Replay(channel, before + after)
