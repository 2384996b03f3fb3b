"""Gemini embeddings through google-genai; the knowledge base's only importer of that SDK."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.errors import ConfigError, PermanentError, TransientError


@asynccontextmanager
async def _mapped() -> AsyncIterator[None]:
    from google.genai import errors

    try:
        yield
    except errors.APIError as exc:
        if exc.code in (401, 403):
            raise ConfigError(f"gemini embeddings: HTTP {exc.code} (check the API key)") from exc
        kind = TransientError if exc.code in (408, 429) or exc.code >= 500 else PermanentError
        raise kind(f"gemini embeddings: HTTP {exc.code}") from exc


def _normalised(values: list[float]) -> list[float]:
    # Gemini vectors below the full size are not unit length; cosine search expects them to be.
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values] if norm else values


class GeminiEmbedder:
    """Embeds in batches with `output_dimensionality` = the configured size."""

    def __init__(self, api_key: str, model: str, dimensions: int, base_url: str | None = None,
                 api_version: str = "v1beta") -> None:
        self._api_key, self._model, self._dimensions = api_key, model, dimensions
        self._base_url, self._api_version = base_url, api_version
        self._client: Any = None

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def _sdk(self) -> Any:
        if self._client is None:
            from google import genai
            from google.genai import types

            options = types.HttpOptions(base_url=self._base_url, api_version=self._api_version)
            self._client = genai.Client(api_key=self._api_key, http_options=options)
        return self._client

    async def embed(self, texts: list[str]) -> list[list[float]]:
        from google.genai import types

        out: list[list[float]] = []
        config = types.EmbedContentConfig(output_dimensionality=self._dimensions)
        for start in range(0, len(texts), budgets.BAMBOO_EMBED_BATCH):
            batch = texts[start : start + budgets.BAMBOO_EMBED_BATCH]
            async with _mapped():
                response = await self._sdk().aio.models.embed_content(model=self._model, contents=batch, config=config)
            out += [_normalised(list(e.values or [])) for e in response.embeddings or []]
        if len(out) != len(texts):
            raise PermanentError(f"gemini embeddings: {len(out)} vectors for {len(texts)} texts")
        return out

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aio.aclose()
            self._client = None
