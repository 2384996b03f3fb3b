"""A real Podman sandbox shared by the explorer tests of one module."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest_asyncio

from hummingbird_agent.sandbox import PodmanSandbox
from tests.podman_box import MiB, podman_box


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def box() -> AsyncIterator[PodmanSandbox]:
    async with podman_box("explorer", memory_bytes=512 * MiB, workdir_bytes=64 * MiB) as sandbox:
        yield sandbox


def kept_open(sandbox: PodmanSandbox) -> Callable[[], Any]:
    """The explorer's sandbox factory handing out the module's started sandbox and leaving it open after each
    run (starting one per test costs ~0.3 s): a lifecycle helper, the sandbox itself is real."""
    @contextlib.asynccontextmanager
    async def reuse() -> AsyncIterator[PodmanSandbox]:
        yield sandbox
    return reuse
