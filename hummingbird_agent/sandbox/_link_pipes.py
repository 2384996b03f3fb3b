"""The Podman channel: a unix socketpair whose other end is the box's PID 1, handed to it by `podman run`.

A command's request carries its stdio pipes (SCM_RIGHTS): the command reads and writes them directly, so its
bytes cross one pipe, and only the request and the exit code pass through the socket.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import os
import socket

from hummingbird_agent import budgets
from hummingbird_agent.sandbox import _wire
from hummingbird_agent.sandbox._link import BoxLink
from hummingbird_agent.sandbox._pipes import Pipe, pipe


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """(host end, box end): one packet a frame, so a request and the pipes passed with it arrive together."""
    host, box = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    host.setblocking(False)
    return host, box


class PipeLink(BoxLink):
    """A box's channel on the host end of its socketpair."""

    def __init__(self, name: str, sock: socket.socket) -> None:
        super().__init__(name)
        self._sock = sock

    async def _recv(self) -> bytes:
        size = budgets.SANDBOX_FRAME_MAX_BYTES + _wire.HEADER.size
        return await asyncio.get_running_loop().sock_recv(self._sock, size)

    async def _close_transport(self) -> None:
        self._sock.close()

    async def _send_frame(self, data: bytes) -> None:
        await self._sendmsg(data, [])

    async def _sendmsg(self, data: bytes, fds: list[int]) -> None:
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        while True:
            self.check()
            try:
                self._sock.sendmsg([data], ancillary)
                return
            except BlockingIOError:
                ready = asyncio.get_running_loop().create_future()
                asyncio.get_running_loop().add_writer(self._sock, ready.set_result, None)
                try:
                    await ready
                finally:
                    asyncio.get_running_loop().remove_writer(self._sock)

    async def spawn(self, argv: list[str], stdin: bool, sweep_s: float) -> PipeCommand:
        """Start `argv` in the box on pipes made here (after a sweep when `sweep_s` > 0)."""
        ident, ended = self._register()
        ends = [pipe() for _ in range(3 if stdin else 2)]
        # The box gets the read end of stdin and the write ends of stdout and stderr; this process the others.
        theirs = [ends[0][0], *(w for _, w in ends[1:])] if stdin else [w for _, w in ends]
        mine = [ends[0][1], *(r for r, _ in ends[1:])] if stdin else [r for r, _ in ends]
        try:
            await self._sendmsg(_wire.spawn(ident, argv, stdin, sweep_s), theirs)
        except BaseException:
            self._forget(ident)
            for fd in mine:
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)  # the command's copies are then the only ones: its exit ends the streams
        pipes = [Pipe(fd, ended) for fd in mine]
        return PipeCommand(self, ident, ended, pipes[0] if stdin else None, *pipes[-2:])


class PipeCommand:
    """One command of a PipeLink as a Channel."""

    def __init__(self, link: PipeLink, ident: int, ended: asyncio.Future[int], stdin: Pipe | None, stdout: Pipe,
                 stderr: Pipe) -> None:
        self._link, self._ident, self._ended = link, ident, ended
        self._stdin, self._stdout, self._stderr = stdin, stdout, stderr

    async def write(self, data: bytes) -> None:
        assert self._stdin is not None
        await self._stdin.write(data)

    async def close_stdin(self) -> None:
        assert self._stdin is not None
        self._stdin.close()

    async def read_stdout(self) -> bytes:
        return await self._stdout.read(budgets.STREAM_CHUNK_BYTES)

    async def read_stderr(self) -> bytes:
        return await self._stderr.read(budgets.STREAM_CHUNK_BYTES)

    async def wait(self) -> int:
        return await asyncio.shield(self._ended)

    async def abort(self) -> None:
        for pipe_ in (self._stdin, self._stdout, self._stderr):
            if pipe_ is not None:
                pipe_.close()
        if not self._ended.done():
            await self._link.kill(self._ident)
            with contextlib.suppress(asyncio.InvalidStateError):
                self._ended.cancel()
