"""Fixtures of the conversation-layer tests: the whole service running against the fakes. `service` runs on
the fake Gemini server unless a test parametrizes it indirectly with another provider."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.runner.harness import Service, seed_gitlab, start_service
from tests.servers import GeminiServer, GitLabServer, MotoServer
from tests.servers.anthropic import AnthropicServer
from tests.servers.openai import OpenAIServer


@pytest.fixture
async def service(request: pytest.FixtureRequest, tmp_path: Path, gitlab_server: GitLabServer,
                  moto_server: MotoServer) -> AsyncIterator[Service]:
    provider = getattr(request, "param", None) or "gemini"
    servers = {"gemini": GeminiServer, "anthropic": AnthropicServer, "openai": OpenAIServer}
    seed_gitlab(gitlab_server)
    with servers[provider]() as model:
        async with start_service(tmp_path, gitlab_server, model, moto_server, provider=provider) as running:
            yield running
    assert not model.errors, f"scripted {provider} server: {model.errors}"
