"""Fixtures of the data-source tests: one real Podman sandbox per module behind the registry's spiller."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.tools.spill import Spiller
from tests.podman_box import MiB, podman_box


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox() -> AsyncIterator[PodmanSandbox]:
    limits = {"memory_bytes": 512 * MiB, "workdir_bytes": 128 * MiB, "pids_limit": 64, "cpus": 1.0}
    async with podman_box("datasrc", **limits) as box:
        yield box


@pytest_asyncio.fixture(loop_scope="module")
async def registry(sandbox: PodmanSandbox) -> ToolRegistry:
    return ToolRegistry(Spiller(sandbox))


async def sandbox_text(sandbox: PodmanSandbox, path: str) -> str:
    result = await sandbox.exec(f"cat {path}", 30)
    assert result.exit_code == 0, result
    return result.stdout.decode()


def response(result: Any) -> dict[str, Any]:
    """What the model would receive for a ToolResult."""
    return dict(result.to_response())
