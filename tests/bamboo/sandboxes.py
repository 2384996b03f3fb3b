"""A real Podman sandbox shared by the explorer tests of one module."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from hummingbird_agent.sandbox import PodmanSandbox
from tests.podman_box import MiB, podman_box


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def box() -> AsyncIterator[PodmanSandbox]:
    async with podman_box("explorer", memory_bytes=512 * MiB, workdir_bytes=64 * MiB) as sandbox:
        yield sandbox
