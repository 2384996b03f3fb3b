"""A sandbox that is created on first use: runs that never touch it (a review answered from the diff,
a follow-up answered from the history) pay no container start, and a resumed session's files are restored
only when the model actually asks for them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Self

from hummingbird_agent import budgets
from hummingbird_agent.sandbox.base import ByteChunks, ExecResult, Sandbox, SandboxState

RestoreSource = Callable[[], AsyncIterator[bytes]]


class LazySandbox:
    """Implements the Sandbox protocol by starting `inner` (and restoring `restore_from`) on first use."""

    def __init__(self, inner: Sandbox, restore_from: RestoreSource | None = None) -> None:
        self._inner = inner
        self._restore_from = restore_from
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def used(self) -> bool:
        """Whether the box was ever started; an unused box has nothing new to archive."""
        return self._inner.state is not SandboxState.UNOPENED

    @property
    def state(self) -> SandboxState:
        if self._closed:
            return SandboxState.CLOSED
        return SandboxState.OPEN

    async def _ready(self) -> Sandbox:
        async with self._lock:
            if self._inner.state is SandboxState.UNOPENED:
                await self._inner.start()
                if self._restore_from is not None:
                    await self._inner.restore(self._restore_from())
        return self._inner

    async def start(self) -> None:
        """Nothing happens until the first command; kept for the protocol."""

    async def exec(self, command: str, timeout_s: float = budgets.SANDBOX_EXEC_TIMEOUT_S) -> ExecResult:
        return await (await self._ready()).exec(command, timeout_s)

    async def stream_exec(
        self, command: str, chunks: ByteChunks, timeout_s: float = budgets.SANDBOX_EXEC_TIMEOUT_S
    ) -> ExecResult:
        return await (await self._ready()).stream_exec(command, chunks, timeout_s)

    async def read_file_iter(self, path: str) -> AsyncIterator[bytes]:
        async for chunk in (await self._ready()).read_file_iter(path):
            yield chunk

    async def write_file(self, path: str, chunks: ByteChunks) -> None:
        await (await self._ready()).write_file(path, chunks)

    async def archive(self) -> AsyncIterator[bytes]:
        async for chunk in (await self._ready()).archive():
            yield chunk

    async def restore(self, chunks: ByteChunks) -> None:
        await (await self._ready()).restore(chunks)

    async def close(self) -> None:
        self._closed = True
        if self.used:
            await self._inner.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
