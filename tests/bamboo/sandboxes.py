"""A real Podman sandbox shared by the explorer tests of one module."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from hummingbird_agent.config import SandboxConfig
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.sandbox.podman import check_podman

MiB = 1024 * 1024
SANDBOX_CONFIG = SandboxConfig(memory_bytes=512 * MiB, workdir_bytes=64 * MiB)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def box() -> AsyncIterator[PodmanSandbox]:
    await check_podman(SANDBOX_CONFIG)
    async with PodmanSandbox(SANDBOX_CONFIG, session_id="explorer") as sandbox:
        yield sandbox
