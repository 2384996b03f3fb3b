"""A command in a sandbox with both pipes open: the host writes lines to its stdin while reading lines
from its stdout (the explorer's tool-call channel). Backend-independent: it uses the backend's channel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from hummingbird_agent import budgets
from hummingbird_agent.errors import SandboxError
from hummingbird_agent.sandbox._channel import Captured, Channel, collect, timed_argv
from hummingbird_agent.sandbox._core import SandboxBase
from hummingbird_agent.sandbox.base import Sandbox


class Duplex:
    """Line I/O with one running command. Lines longer than `max_line_bytes` raise SandboxError."""

    def __init__(self, channel: Channel, max_line_bytes: int) -> None:
        self._channel = channel
        self._max = max_line_bytes
        self._buffer = b""
        self._eof = False
        self.finished = False
        self._stderr: asyncio.Future[Captured] = asyncio.ensure_future(
            collect(channel.read_stderr, budgets.SANDBOX_STDERR_CAP_BYTES))

    async def send(self, data: bytes) -> None:
        await self._channel.write(data)

    async def readline(self) -> bytes:
        """The next line without its newline; b"" once stdout has ended (a last unterminated line is a line)."""
        while b"\n" not in self._buffer and not self._eof:
            if len(self._buffer) > self._max:
                raise SandboxError(f"sandbox sent a line over {self._max} bytes")
            chunk = await self._channel.read_stdout()
            self._eof = not chunk
            self._buffer += chunk
        line, sep, self._buffer = self._buffer.partition(b"\n")
        if len(line) > self._max:
            raise SandboxError(f"sandbox sent a line over {self._max} bytes")
        return line if (sep or line) else b""

    async def finish(self) -> tuple[int, bytes]:
        """Close stdin, wait for the exit code; (exit code, the first bytes of stderr)."""
        await self._channel.close_stdin()
        code = await self._channel.wait()
        self.finished = True
        return code, (await self._stderr).data


@asynccontextmanager
async def duplex_exec(box: Sandbox, command: str, timeout_s: float,
                      max_line_bytes: int = budgets.EXPLORE_MESSAGE_MAX_BYTES) -> AsyncIterator[Duplex]:
    """Run `command` (sh -c, killed at `timeout_s`) with stdin and stdout both open. On leaving, a command
    still running is killed and the box's stray processes are swept."""
    if not isinstance(box, SandboxBase):
        raise SandboxError(f"{type(box).__name__} offers no duplex channel")
    async with box.command_slot() as open_channel:  # what the command leaves behind is swept after it
        channel = await open_channel(timed_argv(command, timeout_s), True, False)
        duplex = Duplex(channel, max_line_bytes)
        try:
            yield duplex
        finally:
            duplex._stderr.cancel()
            await asyncio.shield(channel.abort())
