"""A real Podman sandbox shared by the tool and agent tests of one module (starting one takes ~0.3 s)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from hummingbird_agent.sandbox import PodmanSandbox
from tests.podman_box import MiB, podman_box


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox() -> AsyncIterator[PodmanSandbox]:
    async with podman_box("tooltests", memory_bytes=512 * MiB, workdir_bytes=256 * MiB) as box:
        yield box


async def read_file(box: PodmanSandbox, path: str) -> bytes:
    return b"".join([chunk async for chunk in box.read_file_iter(path)])
