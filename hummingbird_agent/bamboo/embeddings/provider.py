"""Embeddings from a model provider (Gemini / Vertex AI, or any OpenAI-compatible server such as OpenAI,
vLLM or Ollama) through its model adapter, which owns the SDK and the error mapping."""

from __future__ import annotations

import math
from typing import Protocol

from hummingbird_agent import budgets
from hummingbird_agent.errors import PermanentError


class EmbeddingSource(Protocol):
    async def embed(self, model: str, texts: list[str], dimensions: int | None) -> list[list[float]]: ...

    async def aclose(self) -> None: ...


def _normalised(values: list[float]) -> list[float]:
    # Vectors below a model's full size (and some servers' vectors) are not unit length; cosine search
    # expects them to be.
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values] if norm else values


class ProviderEmbedder:
    """Embeds in batches, asking for `dimensions` (servers that ignore it must then return that size)."""

    def __init__(self, source: EmbeddingSource, model: str, dimensions: int, name: str) -> None:
        self._source, self._model, self._dimensions, self._name = source, model, dimensions, name

    @property
    def dimensions(self) -> int:
        return self._dimensions

    async def embed(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), budgets.BAMBOO_EMBED_BATCH):
            batch = texts[start : start + budgets.BAMBOO_EMBED_BATCH]
            out += [_normalised(v) for v in await self._source.embed(self._model, batch, self._dimensions)]
        if len(out) != len(texts):
            raise PermanentError(f"{self._name} embeddings: {len(out)} vectors for {len(texts)} texts")
        if any(len(v) != self._dimensions for v in out):
            raise PermanentError(f"{self._name} embeddings: {self._model} does not return {self._dimensions} "
                                 "dimensions (set bamboo.embeddings.dimensions to its size)")
        return out

    async def aclose(self) -> None:
        await self._source.aclose()
