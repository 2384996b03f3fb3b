"""A command's stdio pipes as seen from the host: created here, their other ends passed into the box.

A command's output ends at the pipe's end of file, or, once the box reported its exit, when what it wrote before
is read (a background process holding the pipe open is not waited for). Its input fails once it has exited.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import Callable

from hummingbird_agent import budgets

# The pipes hold 1 MiB (Linux's default pipe-max-size; the default is 64 KiB, one chunk), so the writer keeps
# writing while this process is between two reads: a 64 KiB pipe made a 100 MB read ~30 % slower.
PIPE_SIZE_BYTES = 1024 * 1024


def pipe() -> tuple[int, int]:
    """(read end, write end), close-on-exec, 1 MiB."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE_BYTES)
    return read_end, write_end


class Pipe:
    """This process's end of a pipe passed to a command, non-blocking, read or written without a buffer.
    `ended` is done once the command has exited."""

    def __init__(self, fd: int, ended: asyncio.Future[int]) -> None:
        os.set_blocking(fd, False)
        self._fd: int | None = fd
        self._ended = ended
        self._left = budgets.SANDBOX_DRAIN_AFTER_EXIT_BYTES

    async def write(self, data: bytes) -> None:
        """Write all of `data`; BrokenPipeError once the command closed its end or exited."""
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._open_fd(), view) :]
            except BlockingIOError:
                if self._ended.done():
                    raise BrokenPipeError("the command has exited") from None
                await self._ready(asyncio.get_running_loop().add_writer, asyncio.get_running_loop().remove_writer)

    async def read(self, size: int) -> bytes:
        """Up to `size` bytes; b"" at the end of the stream (or once closed here)."""
        while self._fd is not None:
            try:
                data = os.read(self._fd, min(size, self._left) if self._ended.done() else size)
            except BlockingIOError:
                if self._ended.done():
                    break  # the command exited and what it wrote is read
                await self._ready(asyncio.get_running_loop().add_reader, asyncio.get_running_loop().remove_reader)
                continue
            if self._ended.done():
                self._left -= len(data)
            if data and self._left > 0:
                return data
            self.close()
            return data
        self.close()
        return b""

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _open_fd(self) -> int:
        if self._fd is None:
            raise BrokenPipeError("the pipe was closed")
        return self._fd

    async def _ready(self, add: Callable[..., object], remove: Callable[[int], object]) -> None:
        """Wait until the fd is ready or the command has exited."""
        fd = self._open_fd()
        ready = asyncio.get_running_loop().create_future()
        add(fd, _settle, ready)
        try:
            await asyncio.wait([ready, self._ended], return_when=asyncio.FIRST_COMPLETED)
        finally:
            remove(fd)
            ready.cancel()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():  # the fd may be reported ready again before the waiter runs
        future.set_result(None)
