"""One `podman exec` child process as a Channel, with a stream's bytes on a pipe handed to the command itself.

Podman's attached stdio is a relay: podman copies the caller's pipe to conmon's attach socket, conmon copies it
to the command's pipe (and back for output), two extra processes and copies per byte. A stream (stdin of
`stream_exec`, stdout of a file read or an archive) instead goes through a pipe this process creates and passes
to the command with `--preserve-fds`: the command reads or writes it directly, so its bytes cross one pipe. The
pipe carries only those bytes; stderr (the sweep mark, error lines) and the exit code still come through podman.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import Callable

from hummingbird_agent import budgets

# The pipes to and from `podman exec` hold 1 MiB (Linux's default pipe-max-size; the default is 64 KiB, one
# chunk), so the writer keeps writing while this process is between two reads: a 64 KiB pipe made a 100 MB read
# ~30 % slower than podman writing to a file.
PIPE_SIZE_BYTES = 1024 * 1024
# The buffer of podman's attached stdout and stderr above the pipe's, so a fast producer is not paused per
# chunk read.
PIPE_LIMIT_BYTES = 4 * PIPE_SIZE_BYTES
# Inside the sandbox: the command with fd 3 (the passed pipe) as its stdin / stdout, fd 3 closed.
_STDIN_FROM_FD3 = 'exec "$@" <&3 3<&-'
_STDOUT_TO_FD3 = 'exec "$@" >&3 3>&-'
# On the host: podman started with the pipe, given to it as stdin / stdout, moved to fd 3 (what
# `--preserve-fds=1` passes on); its own stdin / stdout is /dev/null. The shell execs podman, so no
# process stays between the two.
_HOST_STDIN_AS_FD3 = 'exec "$@" 3<&0 0</dev/null'
_HOST_STDOUT_AS_FD3 = 'exec "$@" 3>&1 1>/dev/null'


class Pipe:
    """This process's end of a pipe passed to a command, non-blocking, read or written without a buffer."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd: int | None = fd

    async def write(self, data: bytes) -> None:
        """Write all of `data`; BrokenPipeError once the command closed its end."""
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._open_fd(), view) :]
            except BlockingIOError:
                await self._ready(asyncio.get_running_loop().add_writer, asyncio.get_running_loop().remove_writer)

    async def read(self, size: int) -> bytes:
        """Up to `size` bytes; b"" at the end of the stream (or once closed here)."""
        while self._fd is not None:
            try:
                data = os.read(self._fd, size)
            except BlockingIOError:
                await self._ready(asyncio.get_running_loop().add_reader, asyncio.get_running_loop().remove_reader)
                continue
            if not data:
                self.close()
            return data
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
        fd = self._open_fd()
        ready = asyncio.get_running_loop().create_future()
        add(fd, _settle, ready)
        try:
            await ready
        finally:
            remove(fd)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():  # the fd may be reported ready again before the waiter runs
        future.set_result(None)


class ExecChannel:
    """A `podman exec` child process as a Channel; its stdin or stdout may be a pipe of its own."""

    def __init__(self, proc: asyncio.subprocess.Process, stdin: Pipe | None = None, stdout: Pipe | None = None,
                 ) -> None:
        self._proc = proc
        self._stdin, self._stdout = stdin, stdout

    async def write(self, data: bytes) -> None:
        assert self._stdin is not None
        await self._stdin.write(data)

    async def close_stdin(self) -> None:
        assert self._stdin is not None
        self._stdin.close()

    async def read_stdout(self) -> bytes:
        if self._stdout is not None:
            return await self._stdout.read(budgets.STREAM_CHUNK_BYTES)
        assert self._proc.stdout is not None
        return await self._proc.stdout.read(budgets.STREAM_CHUNK_BYTES)

    async def read_stderr(self) -> bytes:
        assert self._proc.stderr is not None
        return await self._proc.stderr.read(budgets.STREAM_CHUNK_BYTES)

    async def wait(self) -> int:
        return await self._proc.wait()

    async def abort(self) -> None:
        for pipe in (self._stdin, self._stdout):
            if pipe is not None:
                pipe.close()
        if self._proc.returncode is None:
            self._proc.kill()
            await self._proc.wait()


async def open_exec(podman: list[str], argv: list[str], stdin: bool, stream_out: bool, cwd: str | None,
                    ) -> ExecChannel:
    """Start `podman ... exec NAME` (`podman`) running `argv`. With `stdin`, the command reads a pipe this process
    writes; with `stream_out`, it writes its stdout to a pipe this process reads; otherwise podman attaches."""
    if not (stdin or stream_out):
        proc = await _spawn([*podman, *argv], asyncio.subprocess.DEVNULL, asyncio.subprocess.PIPE, cwd)
        return ExecChannel(proc)
    read_end, write_end = _pipe()
    mine, theirs = (write_end, read_end) if stdin else (read_end, write_end)
    try:
        if stdin:
            cmd = _host_fd3(_HOST_STDIN_AS_FD3, podman, _STDIN_FROM_FD3, argv)
            proc = await _spawn(cmd, theirs, asyncio.subprocess.PIPE, cwd)
        else:
            cmd = _host_fd3(_HOST_STDOUT_AS_FD3, podman, _STDOUT_TO_FD3, argv)
            proc = await _spawn(cmd, asyncio.subprocess.DEVNULL, theirs, cwd)
    except BaseException:
        os.close(mine)
        raise
    finally:
        os.close(theirs)  # the command's copy is then the only one: its exit ends the stream
    pipe = Pipe(mine)
    return ExecChannel(proc, stdin=pipe) if stdin else ExecChannel(proc, stdout=pipe)


def _host_fd3(host_move: str, podman: list[str], inside_move: str, argv: list[str]) -> list[str]:
    exec_at = podman.index("exec") + 1
    podman_fd3 = [*podman[:exec_at], "--preserve-fds=1", *podman[exec_at:]]
    return ["/bin/sh", "-c", host_move, "sh", *podman_fd3, "sh", "-c", inside_move, "sh", *argv]


def _pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE_BYTES)
    return read_end, write_end


async def _spawn(cmd: list[str], stdin: int, stdout: int, cwd: str | None) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdin=stdin, stdout=stdout, stderr=asyncio.subprocess.PIPE,
        limit=PIPE_LIMIT_BYTES, pipesize=PIPE_SIZE_BYTES, cwd=cwd,
    )
    return proc
