"""Fixtures of the conversation-layer tests: the whole service running against the fakes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.runner.harness import Service, seed_gitlab, start_service
from tests.servers import GeminiServer, GitLabServer, MotoServer


@pytest.fixture
async def service(tmp_path: Path, gitlab_server: GitLabServer, gemini_server: GeminiServer,
                  moto_server: MotoServer) -> AsyncIterator[Service]:
    seed_gitlab(gitlab_server)
    async with start_service(tmp_path, gitlab_server, gemini_server, moto_server) as running:
        yield running
