"""One real Podman sandbox shared by the tests of a module: the helper every module-scoped fixture uses."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.sandbox.podman import check_podman

MiB = 1024 * 1024


@contextlib.asynccontextmanager
async def podman_box(session_id: str, **limits: Any) -> AsyncIterator[PodmanSandbox]:
    """A started sandbox with `limits` (SandboxConfig fields); a one-line ConfigError when Podman is unusable."""
    config = SandboxConfig(**limits)
    await check_podman(config)
    async with PodmanSandbox(config, session_id=session_id) as box:
        yield box
