"""Fixtures of the knowledge-base tests: the embedded stores, and the knowledge base's LLM as the real Gemini
adapter talking to the scripted Gemini server (a module may define its own `stores` / `llm` instead)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.bamboo.learn.accumulator import Stores
from hummingbird_agent.models.gemini import GeminiModel, GeminiSettings
from hummingbird_agent.models.retry import RetryPolicy
from tests.bamboo.kb import open_stores
from tests.servers import GeminiServer


@pytest.fixture
async def stores() -> AsyncIterator[Stores]:
    async for s in open_stores():
        yield s


@pytest.fixture
async def gemini_model(gemini_server: GeminiServer) -> AsyncIterator[GeminiModel]:
    """The real Gemini adapter on the scripted Gemini server (what the factories take as `model`)."""
    model = GeminiModel(GeminiSettings("test-key", gemini_server.url), RetryPolicy(retries=0))
    yield model
    await model.aclose()


@pytest.fixture
def llm(gemini_model: GeminiModel) -> JsonLLM:
    """The knowledge base's JSON calls over that adapter; answer them with `gemini_server.script(...)` or
    `gemini_server.respond_with(rule)`."""
    return JsonLLM(ModelText(gemini_model, "gemini-test"))
