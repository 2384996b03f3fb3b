"""The Kubernetes channel: one exec websocket a box running `sandbox-init --serve`, which relays every command's
stdin, stdout and stderr in frames (a pod's processes cannot be handed a pipe from here)."""

from __future__ import annotations

import asyncio

from hummingbird_agent import budgets
from hummingbird_agent.sandbox import _wire
from hummingbird_agent.sandbox._channel import Channel
from hummingbird_agent.sandbox._link import BoxLink
from hummingbird_agent.sandbox._wire import Frame

# The exec running the command server inside the pod.
SERVE_ARGV = ["/usr/local/bin/sandbox-init", "--serve"]
# Output chunks held per command stream before the channel waits for that command's reader (backpressure).
_QUEUE_CHUNKS = 16


class RelayLink(BoxLink):
    """A box's channel over the exec session `transport` (the websocket's stdin and stdout)."""

    def __init__(self, name: str, transport: Channel) -> None:
        super().__init__(name)
        self._transport = transport
        self._sending = asyncio.Lock()  # one frame at a time: the websocket splits long writes
        self._streams: dict[int, dict[int, asyncio.Queue[bytes]]] = {}

    async def _recv(self) -> bytes:
        return await self._transport.read_stdout()

    async def _close_transport(self) -> None:
        await self._transport.abort()

    async def _send_frame(self, data: bytes) -> None:
        self.check()
        async with self._sending:
            await self._transport.write(data)

    async def _output(self, frame: Frame) -> None:
        queue = self._streams.get(frame.ident, {}).get(frame.kind)
        if queue is not None:
            await queue.put(frame.payload)
            if not frame.payload:
                self._streams[frame.ident].pop(frame.kind, None)

    def _ended(self, ident: int) -> None:
        for queue in self._streams.pop(ident, {}).values():
            _end(queue)

    async def spawn(self, argv: list[str], stdin: bool, sweep_s: float) -> RelayCommand:
        ident, ended = self._register()
        streams = {kind: asyncio.Queue[bytes](_QUEUE_CHUNKS) for kind in (_wire.OUT, _wire.ERR)}
        self._streams[ident] = streams
        try:
            await self._send_frame(_wire.spawn(ident, argv, stdin, sweep_s))
        except BaseException:
            self._forget(ident)
            self._streams.pop(ident, None)
            raise
        return RelayCommand(self, ident, ended, streams[_wire.OUT], streams[_wire.ERR])

    def abandon(self, ident: int) -> None:
        """Drop what is still coming for command `ident`, unblocking the channel if its reader stopped."""
        self._ended(ident)

    def _break(self, exc: _wire.ChannelBroken) -> None:
        super()._break(exc)
        for ident in list(self._streams):
            self._ended(ident)


def _end(queue: asyncio.Queue[bytes]) -> None:
    """Empty the queue and put its end of stream."""
    while not queue.empty():
        queue.get_nowait()
    queue.put_nowait(b"")


class RelayCommand:
    """One command of a RelayLink as a Channel."""

    def __init__(self, link: RelayLink, ident: int, ended: asyncio.Future[int], stdout: asyncio.Queue[bytes],
                 stderr: asyncio.Queue[bytes]) -> None:
        self._link, self._ident, self._ended = link, ident, ended
        self._stdout, self._stderr = stdout, stderr

    async def write(self, data: bytes) -> None:
        step = budgets.STREAM_CHUNK_BYTES
        for i in range(0, len(data), step):
            if self._ended.done():
                raise BrokenPipeError("the command has exited")
            await self._link._send_frame(_wire.encode(_wire.DATA, self._ident, data[i : i + step]))

    async def close_stdin(self) -> None:
        if not self._ended.done():
            await self._link._send_frame(_wire.encode(_wire.EOF, self._ident))

    async def read_stdout(self) -> bytes:
        return await _read(self._stdout)

    async def read_stderr(self) -> bytes:
        return await _read(self._stderr)

    async def wait(self) -> int:
        return await asyncio.shield(self._ended)

    async def abort(self) -> None:
        self._link.abandon(self._ident)
        if not self._ended.done():
            await self._link.kill(self._ident)
            self._ended.cancel()


async def _read(queue: asyncio.Queue[bytes]) -> bytes:
    chunk = await queue.get()
    if not chunk:
        queue.put_nowait(b"")  # every later read sees the end too
    return chunk
