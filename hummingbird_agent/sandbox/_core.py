"""Backend-independent sandbox behaviour: lifecycle, timeouts, streaming, archive and restore.

A backend supplies four steps: create the box, open a command channel, sweep stray processes, destroy.
When the last command in flight returns, every process it left behind is swept, so each command starts from
a clean process table (background jobs, `setsid`/`nohup` children and detached fork bombs included).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Self

from hummingbird_agent import budgets
from hummingbird_agent.errors import SandboxError
from hummingbird_agent.sandbox._channel import Channel, collect, run_channel, timed_argv, write_command
from hummingbird_agent.sandbox.base import WORKDIR, ByteChunks, ExecResult, SandboxState

log = logging.getLogger(__name__)

# Exit status of a process killed by SIGKILL as reported by sh/timeout (128 + 9).
_KILLED = 137
_WORKDIR_PARENT, _WORKDIR_NAME = WORKDIR.rsplit("/", 1)
ARCHIVE_ARGV = ["tar", "czf", "-", "-C", _WORKDIR_PARENT, _WORKDIR_NAME]
RESTORE_COMMAND = f"tar xzf - -C {_WORKDIR_PARENT}"


class SandboxBase(abc.ABC):
    """Implements the Sandbox protocol on top of the backend steps `_create`, `_open`, `_sweep`, `_destroy`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._state = SandboxState.UNOPENED
        self._closing: asyncio.Future[None] | None = None
        # Commands running now; the sweep waits until none is, so it never kills a concurrent command.
        self._in_flight = 0
        self._sweeping: asyncio.Future[None] | None = None

    # --- backend steps ------------------------------------------------------------------------------
    @abc.abstractmethod
    async def _create(self) -> None: ...

    @abc.abstractmethod
    async def _open(self, argv: list[str], stdin: bool) -> Channel: ...

    @abc.abstractmethod
    async def _sweep(self) -> None:
        """Kill every process of the sandbox user except the box's init."""

    @abc.abstractmethod
    async def _destroy(self) -> None: ...

    # --- lifecycle ------------------------------------------------------------------------------------
    @property
    def state(self) -> SandboxState:
        return self._state

    async def start(self) -> None:
        if self._state is not SandboxState.UNOPENED:
            raise SandboxError(f"sandbox {self.name} cannot start: it is {self._state.value}")
        try:
            async with asyncio.timeout(budgets.SANDBOX_START_TIMEOUT_S):
                await self._create()
        except BaseException:
            await self.close()
            raise
        self._state = SandboxState.OPEN
        log.info("sandbox started name=%s", self.name)

    async def close(self) -> None:
        if self._closing is None:
            self._state = SandboxState.CLOSED
            if self._sweeping is not None:
                self._sweeping.cancel()  # the box goes away with everything in it
            self._closing = asyncio.ensure_future(self._destroy_bounded())
        # shield: a cancelled caller must not abort the removal half-way.
        await asyncio.shield(self._closing)

    async def _destroy_bounded(self) -> None:
        try:
            async with asyncio.timeout(budgets.SANDBOX_CLOSE_TIMEOUT_S):
                await self._destroy()
        except (TimeoutError, SandboxError) as exc:
            log.error("sandbox cleanup failed name=%s error=%s", self.name, exc)
            return
        log.info("sandbox closed name=%s", self.name)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def _require_open(self) -> None:
        if self._state is not SandboxState.OPEN:
            raise SandboxError(f"sandbox {self.name} is {self._state.value}, not open")

    # --- commands -------------------------------------------------------------------------------------
    async def exec(self, command: str, timeout_s: float = budgets.SANDBOX_EXEC_TIMEOUT_S) -> ExecResult:
        return await self._run(command, None, timeout_s)

    async def stream_exec(
        self, command: str, chunks: ByteChunks, timeout_s: float = budgets.SANDBOX_STREAM_TIMEOUT_S
    ) -> ExecResult:
        return await self._run(command, chunks, timeout_s)

    async def _run(self, command: str, chunks: ByteChunks | None, timeout_s: float) -> ExecResult:
        async with self.command_slot():
            return await self._run_in_slot(command, chunks, timeout_s)

    async def _run_in_slot(self, command: str, chunks: ByteChunks | None, timeout_s: float) -> ExecResult:
        started = time.monotonic()
        channel = await self._open(timed_argv(command, timeout_s), stdin=chunks is not None)
        finished = False
        try:
            async with asyncio.timeout(timeout_s + budgets.SANDBOX_KILL_GRACE_S):
                code, out, err = await run_channel(channel, chunks)
            finished = True
        except TimeoutError:
            log.warning("sandbox exec transport wedged name=%s; killing the session", self.name)
            code, out, err = _KILLED, None, None
        finally:
            if not finished:
                await asyncio.shield(channel.abort())  # what it left is swept when the slot ends
        timed_out = not finished or (code == _KILLED and time.monotonic() - started >= timeout_s)
        return ExecResult(
            exit_code=code,
            stdout=out.data if out else b"",
            stderr=err.data if err else b"",
            timed_out=timed_out,
            stdout_truncated=bool(out and out.truncated),
            stderr_truncated=bool(err and err.truncated),
        )

    @contextlib.asynccontextmanager
    async def command_slot(self) -> AsyncIterator[None]:
        """Hold the box for one command: wait for a pending sweep first, sweep after the last one leaves."""
        self._require_open()
        if self._sweeping is not None:
            await asyncio.wait([self._sweeping])  # never raises: a sweep cancelled by close() is just done
        self._require_open()
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1
            if self._in_flight == 0 and self._state is SandboxState.OPEN:
                # Not awaited here: the caller gets its result now, the next command waits for the sweep.
                self._sweeping = asyncio.ensure_future(self._sweep_leftovers())

    async def _sweep_leftovers(self) -> None:
        try:
            await self._sweep()
        except SandboxError as exc:
            log.warning("sandbox sweep failed name=%s error=%s", self.name, exc)

    # --- files and archives ---------------------------------------------------------------------------
    def read_file_iter(self, path: str) -> AsyncIterator[bytes]:
        return self._read_out(["cat", "--", path], f"read {path}")

    def archive(self) -> AsyncIterator[bytes]:
        return self._read_out(ARCHIVE_ARGV, "archive")

    async def write_file(self, path: str, chunks: ByteChunks) -> None:
        self._check(await self.stream_exec(write_command(path), chunks), f"write {path}")

    async def restore(self, chunks: ByteChunks) -> None:
        self._check(await self.stream_exec(RESTORE_COMMAND, chunks), "restore")

    def _check(self, result: ExecResult, what: str) -> None:
        if not result.ok:
            detail = result.stderr.decode(errors="replace").strip().splitlines()[:1]
            reason = "timed out" if result.timed_out else f"exit {result.exit_code}"
            raise SandboxError(f"sandbox {self.name}: {what} failed ({reason}): {' '.join(detail)}")

    async def _read_out(self, argv: list[str], what: str) -> AsyncIterator[bytes]:
        """Yield a command's stdout as it comes; raise SandboxError if it fails or outlives its bound."""
        async with self.command_slot():
            async for chunk in self._read_out_in_slot(argv, what):
                yield chunk

    async def _read_out_in_slot(self, argv: list[str], what: str) -> AsyncIterator[bytes]:
        channel = await self._open(argv, stdin=False)
        err = asyncio.ensure_future(collect(channel.read_stderr, budgets.SANDBOX_STDERR_CAP_BYTES))
        # A watchdog instead of a timeout per read: one timer for the whole stream keeps reads cheap.
        expired = asyncio.Event()
        watchdog = asyncio.get_running_loop().call_later(budgets.SANDBOX_STREAM_TIMEOUT_S, expired.set)
        killer = asyncio.ensure_future(_abort_when(expired, channel))
        finished = False
        try:
            while chunk := await channel.read_stdout():
                yield chunk
            code = await channel.wait()
            stderr = await err
            finished = True
        finally:
            watchdog.cancel()
            killer.cancel()
            err.cancel()
            if not finished:
                await asyncio.shield(channel.abort())  # what it left is swept when the slot ends
        if expired.is_set():
            raise SandboxError(f"sandbox {self.name}: {what} exceeded {budgets.SANDBOX_STREAM_TIMEOUT_S:.0f} s")
        self._check(ExecResult(code, b"", stderr.data), what)


async def _abort_when(event: asyncio.Event, channel: Channel) -> None:
    await event.wait()
    await channel.abort()
