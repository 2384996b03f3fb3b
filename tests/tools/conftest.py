"""A real Podman sandbox shared by the tool and agent tests of one module (starting one takes ~0.3 s)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from hummingbird_agent.config import SandboxConfig
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.sandbox.podman import check_podman

MiB = 1024 * 1024
SANDBOX_CONFIG = SandboxConfig(memory_bytes=512 * MiB, workdir_bytes=256 * MiB)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox() -> AsyncIterator[PodmanSandbox]:
    await check_podman(SANDBOX_CONFIG)
    async with PodmanSandbox(SANDBOX_CONFIG, session_id="tooltests") as box:
        yield box


async def read_file(box: PodmanSandbox, path: str) -> bytes:
    return b"".join([chunk async for chunk in box.read_file_iter(path)])
