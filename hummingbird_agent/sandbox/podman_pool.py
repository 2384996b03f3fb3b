"""A small warm pool of started Podman sandboxes, so a run's sandbox is ready when its first command comes.

Each pooled container is taken by exactly one sandbox and removed after it; nothing is ever returned to the
pool, so no two runs share a container. The pool starts filling when the first sandbox is asked for (a worker
whose runs never use one starts none) and refills in the background as sandboxes are taken; a container left
unused for `max_idle_s` is replaced. Removal is handed to the pool too, so a finished run does not wait for
`podman rm`; `close()` removes every container the pool started or was given, and waits for it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import tempfile
import uuid
from collections import deque
from dataclasses import dataclass

from hummingbird_agent import budgets
from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.errors import SandboxError
from hummingbird_agent.sandbox._link_pipes import PipeLink
from hummingbird_agent.sandbox.podman import PodmanSandbox, create_container, remove_container

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Warm:
    """A started, never used sandbox container and the channel to its command server."""

    name: str
    scratch: str
    link: PipeLink


class PodmanPool:
    """Up to `size` started sandbox containers, each handed out once."""

    def __init__(self, config: SandboxConfig, size: int = budgets.SANDBOX_WARM_POOL_SIZE,
                 max_idle_s: float = budgets.SANDBOX_WARM_POOL_MAX_IDLE_S) -> None:
        self._config, self._size, self._max_idle_s = config, size, max_idle_s
        self._ready: deque[Warm] = deque()
        self._creating: set[asyncio.Task[None]] = set()
        self._removing: set[asyncio.Task[None]] = set()
        self._expiry: dict[str, asyncio.TimerHandle] = {}
        # The channel of every container started here and not yet removed, closed with its removal.
        self._links: dict[str, PipeLink] = {}
        self._filling = False
        self._retry: asyncio.TimerHandle | None = None
        self.closed = False

    @property
    def ready(self) -> int:
        return len(self._ready)

    @property
    def containers(self) -> frozenset[str]:
        """The containers this pool started and has not removed yet (other pools on the host have their own)."""
        return frozenset(self._links)

    def take(self) -> Warm | None:
        """A ready container, now the caller's alone (None when none is ready); starts or tops up the pool."""
        self._filling = True
        warm = self._ready.popleft() if self._ready else None
        if warm is not None:
            self._expiry.pop(warm.name).cancel()
        self._top_up()
        return warm

    def remove_later(self, name: str, scratch: str | None, link: PipeLink | None = None) -> None:
        """Remove a container and close the channel to it (`link`, or the one it was started with here) in the
        background; `close()` waits for it."""
        task = asyncio.ensure_future(self._remove(name, scratch, self._links.pop(name, None) or link))
        self._removing.add(task)
        task.add_done_callback(self._removing.discard)

    async def close(self) -> None:
        """Stop refilling; remove the ready containers, the ones being started and the ones handed back."""
        self.closed = True
        if self._retry is not None:
            self._retry.cancel()
        for task in list(self._creating):
            task.cancel()
        await asyncio.gather(*self._creating, return_exceptions=True)
        while self._ready:
            warm = self._ready.popleft()
            self._expiry.pop(warm.name).cancel()
            self.remove_later(warm.name, warm.scratch)
        while self._removing:
            await asyncio.gather(*list(self._removing), return_exceptions=True)

    def _top_up(self) -> None:
        if self.closed or not self._filling or self._retry is not None:
            return
        while len(self._ready) + len(self._creating) < self._size:
            # A fresh context: the pool's containers belong to no run, so they log no run's session.
            task = asyncio.get_running_loop().create_task(self._create(), context=contextvars.Context())
            self._creating.add(task)
            task.add_done_callback(self._creating.discard)

    async def _create(self) -> None:
        name = f"hb-sandbox-warm-{uuid.uuid4().hex[:12]}"
        scratch = tempfile.mkdtemp(prefix=f"{name}-")
        try:
            async with asyncio.timeout(budgets.SANDBOX_START_TIMEOUT_S):
                # Its lifetime backstop counts from now: add the longest it may wait in the pool.
                link = await create_container(self._config, name, scratch,
                                              budgets.SANDBOX_MAX_LIFETIME_S + self._max_idle_s)
        except (SandboxError, TimeoutError) as exc:
            log.warning("sandbox pool start failed name=%s error=%s", name, exc)
            self.remove_later(name, scratch)
            if self._retry is None:
                self._retry = asyncio.get_running_loop().call_later(budgets.SANDBOX_WARM_POOL_RETRY_S, self._retried)
            return
        except BaseException:  # cancelled by close(): the container may exist half-started
            self.remove_later(name, scratch)
            raise
        self._links[name] = link
        if self.closed:
            self.remove_later(name, scratch)
            return
        log.info("sandbox pool started name=%s", name)
        warm = Warm(name, scratch, link)
        self._ready.append(warm)
        self._expiry[name] = asyncio.get_running_loop().call_later(self._max_idle_s, self._expire, warm)

    def _retried(self) -> None:
        self._retry = None
        self._top_up()

    def _expire(self, warm: Warm) -> None:
        self._expiry.pop(warm.name, None)
        if warm in self._ready:
            self._ready.remove(warm)
            self.remove_later(warm.name, warm.scratch)
            self._top_up()

    async def _remove(self, name: str, scratch: str | None, link: PipeLink | None) -> None:
        try:
            async with asyncio.timeout(budgets.SANDBOX_CLOSE_TIMEOUT_S):
                await remove_container(self._config, name, scratch)
        except (SandboxError, TimeoutError) as exc:
            log.error("sandbox cleanup failed name=%s error=%s", name, exc)
        finally:
            if link is not None:
                await link.close()


class PooledPodmanSandbox(PodmanSandbox):
    """A Podman sandbox on a container taken from `pool`, or started directly when none is ready."""

    def __init__(self, pool: PodmanPool, config: SandboxConfig, session_id: str = "") -> None:
        super().__init__(config, session_id)
        self._pool = pool
        self.warm = False
        """True when the container came ready from the pool."""

    async def _create(self) -> None:
        warm = None if self._pool.closed else self._pool.take()
        if warm is None:
            await super()._create()
            return
        self.name, self._scratch, self._link, self.warm = warm.name, warm.scratch, warm.link, True
        log.info("sandbox taken from the pool name=%s", self.name)

    async def _destroy(self) -> None:
        if self._pool.closed:  # nothing would wait for a removal handed over now
            await super()._destroy()
        else:
            self._pool.remove_later(self.name, self._scratch, self._link)
