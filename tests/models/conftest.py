"""Every model adapter against its scripted fake, through the unmodified SDK: one parametrized fixture."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from hummingbird_agent.models.base import Model
from hummingbird_agent.models.claude import ClaudeModel, ClaudeSettings
from hummingbird_agent.models.gemini import GeminiModel, GeminiSettings
from hummingbird_agent.models.openai_compat import OpenAIModel, OpenAISettings
from hummingbird_agent.models.retry import RetryPolicy
from hummingbird_agent.models.stream import StreamLimits
from tests.servers.anthropic import AnthropicServer
from tests.servers.gemini import GeminiServer
from tests.servers.model_common import PROVIDERS, ModelCall
from tests.servers.openai import OpenAIServer

FAST_RETRY = RetryPolicy(retries=2, base_s=0.01, max_retry_after_s=5)


@dataclass
class Provider:
    name: str
    server: Any
    model: Model

    @property
    def calls(self) -> list[ModelCall] | list[Any]:
        return self.server.generate_calls


def make_adapter(name: str, url: str, retry: RetryPolicy = FAST_RETRY, limits: StreamLimits | None = None,
                 self_hosted: bool = False) -> Model:
    if name == "anthropic":
        return ClaudeModel(ClaudeSettings(api_key="test-key", base_url=url), retry, limits)
    if name == "openai":
        return OpenAIModel(OpenAISettings(api_key="test-key", base_url=f"{url}/v1", self_hosted=self_hosted), retry,
                           limits)
    return GeminiModel(GeminiSettings(api_key="test-key", base_url=url), retry, limits)


@pytest.fixture(params=PROVIDERS)
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[Provider]:
    servers = {"gemini": GeminiServer, "anthropic": AnthropicServer, "openai": OpenAIServer}
    with servers[request.param]() as server:
        model = make_adapter(request.param, server.url)
        yield Provider(request.param, server, model)
        await model.aclose()
    assert not server.errors, server.errors
