"""Fixtures of the conversation-layer tests: the whole service running against the fakes. `service` runs on
the fake Gemini server unless a test parametrizes it indirectly with another provider."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

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

# The commit status the triaged service posts (workflow analyze-failures with triage on).
TRIAGE_STATUS = "hummingbird/triage"


def triage_on(config: dict[str, Any]) -> None:
    config["workflows"]["analyze-failures"]["triage"] = {"enabled": True, "commit_status": TRIAGE_STATUS,
                                                         "outage": {"min_mrs": 2, "window_minutes": 30}}


@pytest.fixture
async def triaged_service(tmp_path: Path, gitlab_server: GitLabServer,
                          moto_server: MotoServer) -> AsyncIterator[Service]:
    """The service on the fake Gemini server with analyze-failures triaged and its commit status named."""
    seed_gitlab(gitlab_server)
    with GeminiServer() as model:
        async with start_service(tmp_path, gitlab_server, model, moto_server, tweak=triage_on) as running:
            yield running
    assert not model.errors, model.errors
