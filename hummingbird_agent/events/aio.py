"""Small asyncio helpers shared by the router and the worker: racing a call against the stop event."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")


async def until_stopped(awaitable: Awaitable[T], stop: asyncio.Event) -> tuple[bool, T | None]:
    """Await `awaitable` unless `stop` is set first; then it is cancelled. Returns (stopped, result)."""
    task = asyncio.ensure_future(awaitable)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        stopper.cancel()
    if task.done():
        return False, task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return True, None


async def sleep_unless_stopped(delay_s: float, stop: asyncio.Event) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), delay_s)


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
