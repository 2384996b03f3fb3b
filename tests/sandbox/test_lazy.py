"""LazySandbox: no container until first use; a resumed session's files come back on first use."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.sandbox import PodmanSandbox, SandboxState
from hummingbird_agent.sandbox.lazy import LazySandbox

pytestmark = pytest.mark.podman
CONFIG = SandboxConfig()


async def test_unused_sandbox_never_starts() -> None:
    inner = PodmanSandbox(CONFIG, session_id="lazy-unused")
    async with LazySandbox(inner) as box:
        assert box.state is SandboxState.OPEN and not box.used
    assert inner.state is SandboxState.UNOPENED


async def test_first_use_starts_and_restores() -> None:
    async with PodmanSandbox(CONFIG, session_id="lazy-source") as source:
        await source.exec("mkdir -p notes && echo kept > notes/a.txt", 30)
        archive = b"".join([chunk async for chunk in source.archive()])

    async def saved() -> AsyncIterator[bytes]:
        yield archive

    inner = PodmanSandbox(CONFIG, session_id="lazy-resumed")
    async with LazySandbox(inner, saved) as box:
        result = await box.exec("cat notes/a.txt", 30)
        assert box.used and result.stdout == b"kept\n"
    assert inner.state is SandboxState.CLOSED
