"""One long-lived channel to a box's command server, carrying every command, sweep, file and archive of the box.

A command then costs a message instead of a runtime exec (`podman exec`: podman, conmon and the OCI runtime,
~0.14 s of CPU each). `BoxLink` keeps the requests in flight and settles them from the server's frames; a
subclass supplies the transport. When the channel ends or carries a malformed frame, every command on it fails
with one ChannelBroken line and so does every later one: the box is unusable and is removed with its run.
"""

from __future__ import annotations

import abc
import asyncio
import itertools
import logging
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.sandbox import _wire
from hummingbird_agent.sandbox._wire import ChannelBroken, Frame, FrameReader

log = logging.getLogger(__name__)


def _quiet(future: asyncio.Future[Any]) -> None:
    """A command aborted before its exit was read must not log 'exception never retrieved'."""
    if not future.cancelled():
        future.exception()


class BoxLink(abc.ABC):
    """Requests in flight on one channel, each settled by the server's EXIT or SWEPT frame."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[int]] = {}
        self._broken: ChannelBroken | None = None
        self._reader: asyncio.Task[None] | None = None
        self._hello: asyncio.Future[None] | None = None

    @abc.abstractmethod
    async def _recv(self) -> bytes:
        """The next bytes from the server; b"" once the channel has ended."""

    @abc.abstractmethod
    async def _close_transport(self) -> None: ...

    async def _output(self, frame: Frame) -> None:
        """Stdout or stderr bytes of a command, on a channel that relays them."""
        raise ChannelBroken(f"sandbox {self.name}: malformed message from the box (output on a pipe channel)")

    def _ended(self, ident: int) -> None:  # noqa: B027 - a hook: only a relaying channel has streams to end
        """The command `ident` has exited (a relaying channel ends its streams)."""

    # --- requests ----------------------------------------------------------------------------------------
    def _register(self) -> tuple[int, asyncio.Future[int]]:
        self.check()
        ident = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        future.add_done_callback(_quiet)
        self._pending[ident] = future
        return ident, future

    def _forget(self, ident: int) -> None:
        self._pending.pop(ident, None)

    def check(self) -> None:
        """Raise ChannelBroken once the channel is unusable."""
        if self._broken is not None:
            raise ChannelBroken(str(self._broken))

    @property
    def broken(self) -> bool:
        return self._broken is not None

    # --- reading -----------------------------------------------------------------------------------------
    async def open(self) -> None:
        """Start reading and wait for the server's first frame; closed again (ChannelBroken) if it does not come:
        an image whose init has no command server never sends one."""
        self._hello = asyncio.get_running_loop().create_future()
        self._hello.add_done_callback(_quiet)
        self._reader = asyncio.ensure_future(self._read_loop())
        try:
            await self._ready()
        except BaseException:
            await self.close()
            raise

    async def _ready(self) -> None:
        assert self._hello is not None
        try:
            async with asyncio.timeout(budgets.SANDBOX_SERVER_READY_S):
                await asyncio.shield(self._hello)
        except TimeoutError:
            raise ChannelBroken(f"sandbox {self.name}: no command server answered within "
                                f"{budgets.SANDBOX_SERVER_READY_S:.0f} s (an image built before it? "
                                "rebuild it: sandbox-image/build-local.sh)") from None

    async def _read_loop(self) -> None:
        frames = FrameReader()
        try:
            while data := await self._recv():
                for frame in frames.feed(data):
                    await self._dispatch(frame)
            self._break(ChannelBroken(f"sandbox {self.name}: the box closed its channel (it ended or was removed)"))
        except ChannelBroken as exc:
            self._break(ChannelBroken(f"sandbox {self.name}: {exc}" if self.name not in str(exc) else str(exc)))
        except OSError as exc:
            self._break(ChannelBroken(f"sandbox {self.name}: channel failed: {type(exc).__name__}: {exc}"))

    async def _dispatch(self, frame: Frame) -> None:
        if frame.kind in (_wire.OUT, _wire.ERR):
            await self._output(frame)
            return
        if frame.kind == _wire.HELLO:
            if self._hello is not None and not self._hello.done():
                self._hello.set_result(None)
            return
        if frame.kind == _wire.FAIL:
            raise ChannelBroken(f"the box refused a request: {_wire.failure(frame.payload)}")
        code = _wire.exit_code(frame.payload) if frame.kind == _wire.EXIT else 0
        future = self._pending.pop(frame.ident, None)
        if frame.kind == _wire.EXIT:
            self._ended(frame.ident)
        if future is not None and not future.done():
            future.set_result(code)

    def _break(self, exc: ChannelBroken) -> None:
        if self._broken is None:
            self._broken = exc
            # Worth a warning only when it cut commands short; a removed idle box's channel ends too.
            (log.warning if self._pending else log.debug)("sandbox channel ended name=%s error=%s", self.name, exc)
        if self._hello is not None and not self._hello.done():
            self._hello.set_exception(ChannelBroken(str(exc)))
        pending, self._pending = self._pending, {}
        for ident, future in pending.items():
            self._ended(ident)
            if not future.done():
                future.set_exception(ChannelBroken(str(exc)))

    # --- lifecycle ---------------------------------------------------------------------------------------
    async def sweep(self) -> None:
        """Kill every process of the box but its servers; returns once they are reaped (or the bound passed)."""
        ident, done = self._register()
        try:
            await self._send_frame(_wire.sweep(ident))
            await done
        finally:
            self._forget(ident)

    @abc.abstractmethod
    async def _send_frame(self, data: bytes) -> None: ...

    async def kill(self, ident: int) -> None:
        """SIGKILL the process group of command `ident` (best effort: the box may be gone)."""
        self._forget(ident)
        if self._broken is None:
            try:
                await self._send_frame(_wire.encode(_wire.KILL, ident))
            except (OSError, ChannelBroken):
                return

    async def close(self) -> None:
        """Stop reading and let go of the channel; the server then ends (and with it a Podman box)."""
        self._break(ChannelBroken(f"sandbox {self.name}: closed"))
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        await self._close_transport()
