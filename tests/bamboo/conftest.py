"""Fixtures of the knowledge-base tests: the embedded stores (the knowledge base's LLM, `llm`, is the real
Gemini adapter on the scripted Gemini server: tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hummingbird_agent.bamboo.learn.accumulator import Stores
from tests.bamboo.kb import open_stores


@pytest.fixture
async def stores() -> AsyncIterator[Stores]:
    async for s in open_stores():
        yield s
