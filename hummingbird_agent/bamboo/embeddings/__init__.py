"""Text embedders of the knowledge base: hashing (deterministic, tests), a provider's embeddings (Gemini /
Vertex AI or OpenAI-compatible, production), MiniLM (offline)."""

from __future__ import annotations

from typing import Protocol


class Embedder(Protocol):
    """Turns texts into unit-length vectors of `dimensions` floats."""

    @property
    def dimensions(self) -> int: ...

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


__all__ = ["Embedder"]
