"""Backend-independent sandbox behaviour: lifecycle, timeouts, streaming, archive and restore.

A backend supplies four steps: create the box, open a command channel, sweep stray processes, destroy.
Each command starts from a clean process table (background jobs, `setsid`/`nohup` children and detached fork
bombs included): a command that finds none in flight and something run since the last sweep has the leftovers
killed first, in its own request; a box left idle is swept by a request of its own shortly after.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
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
# Opens the channel of one command inside a command slot: (argv, stdin wanted, stdout is a stream to read).
Opener = Callable[[list[str], bool, bool], Awaitable[Channel]]


class SandboxBase(abc.ABC):
    """Implements the Sandbox protocol on top of the backend steps `_create`, `_open`, `_sweep`, `_destroy`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._state = SandboxState.UNOPENED
        self._closing: asyncio.Future[None] | None = None
        # Commands running now; a sweep happens only when none is, so it never kills a concurrent command.
        self._in_flight = 0
        # A command has run since the last sweep, so processes it left may still be there.
        self._dirty = False
        # The sweep under way (a request of its own, or a command's); every command entering waits for it.
        self._sweeping: asyncio.Future[None] | None = None
        self._idle_sweep: asyncio.TimerHandle | None = None

    # --- backend steps ------------------------------------------------------------------------------
    @abc.abstractmethod
    async def _create(self) -> None: ...

    @abc.abstractmethod
    async def _open(self, argv: list[str], stdin: bool, stream_out: bool = False, sweep: bool = False) -> Channel:
        """Start `argv`; `stream_out`: its stdout is a stream read to the end, not output to capture; `sweep`:
        kill every other process of the box first (done in the box, before the command starts)."""

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
            self._cancel_idle_sweep()
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
        async with self.command_slot() as open_channel:
            return await self._run_in_slot(open_channel, command, chunks, timeout_s)

    async def _run_in_slot(
        self, open_channel: Opener, command: str, chunks: ByteChunks | None, timeout_s: float
    ) -> ExecResult:
        started = time.monotonic()
        channel: Channel | None = None
        finished = False
        try:
            async with asyncio.timeout(timeout_s + budgets.SANDBOX_KILL_GRACE_S):
                channel = await open_channel(timed_argv(command, timeout_s), chunks is not None, False)
                code, out, err = await run_channel(channel, chunks)
            finished = True
        except TimeoutError:
            log.warning("sandbox exec transport wedged name=%s; killing the session", self.name)
            code, out, err = _KILLED, None, None
        finally:
            if not finished and channel is not None:
                await asyncio.shield(channel.abort())  # what it left is swept after the slot ends
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
    async def command_slot(self) -> AsyncIterator[Opener]:
        """Hold the box for one command; yields the opener of its channel. Waits for a sweep under way; the
        first command after others have run has their leftovers swept first, in its own request."""
        self._require_open()
        self._cancel_idle_sweep()
        while self._sweeping is not None and not self._sweeping.done():
            await asyncio.wait([self._sweeping])  # never raises: a sweep cancelled by close() is just done
            self._require_open()
        sweeping: asyncio.Future[None] | None = None
        if self._dirty and self._in_flight == 0:
            sweeping = self._sweeping = asyncio.get_running_loop().create_future()
        self._in_flight += 1
        try:
            yield functools.partial(self._open_clean, sweeping)
        finally:
            if sweeping is not None and not sweeping.done():
                sweeping.set_result(None)  # never opened: commands waiting for it may go on
            self._in_flight -= 1
            self._dirty = True
            if self._in_flight == 0 and self._state is SandboxState.OPEN:
                self._idle_sweep = asyncio.get_running_loop().call_later(
                    budgets.SANDBOX_IDLE_SWEEP_S, self._sweep_idle_box)

    async def _open_clean(self, sweeping: asyncio.Future[None] | None, argv: list[str], stdin: bool,
                          stream_out: bool) -> Channel:
        """Open a command's channel; with `sweeping`, kill the leftovers first, then let waiting commands go.
        The sweep is part of the command's request: the box does it before anything sent after."""
        if sweeping is None:
            return await self._open(argv, stdin, stream_out)
        try:
            channel = await self._open(argv, stdin, stream_out, sweep=True)
            self._dirty = False
            return channel
        finally:
            if not sweeping.done():
                sweeping.set_result(None)

    def _sweep_idle_box(self) -> None:
        self._idle_sweep = None
        if self._state is SandboxState.OPEN and self._in_flight == 0 and self._dirty:
            self._sweeping = asyncio.ensure_future(self._sweep_leftovers())

    def _cancel_idle_sweep(self) -> None:
        if self._idle_sweep is not None:
            self._idle_sweep.cancel()
            self._idle_sweep = None

    async def _sweep_leftovers(self) -> None:
        try:
            await self._sweep()
        except SandboxError as exc:
            log.warning("sandbox sweep failed name=%s error=%s", self.name, exc)
            return
        self._dirty = False

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
        async with self.command_slot() as open_channel:
            async for chunk in self._read_out_in_slot(open_channel, argv, what):
                yield chunk

    async def _read_out_in_slot(self, open_channel: Opener, argv: list[str], what: str) -> AsyncIterator[bytes]:
        channel = await open_channel(argv, False, True)
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
