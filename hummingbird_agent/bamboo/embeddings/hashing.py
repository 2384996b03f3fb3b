"""Deterministic feature-hashing embedder: words and character trigrams, signed buckets, L2-normalised.

No model and no I/O: equal texts give equal vectors in every process, and texts sharing words score
high, which is what tests and the embedded default need.
"""

from __future__ import annotations

import hashlib
import math
import re

_WORD = re.compile(r"[a-z0-9_]+")


def _features(text: str) -> list[str]:
    words = _WORD.findall(text.lower())
    grams = [f"#{w[i:i + 3]}" for w in words for i in range(max(len(w) - 2, 1))]
    return words + grams


class HashingEmbedder:
    def __init__(self, dimensions: int) -> None:
        self._dimensions = dimensions

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self._dimensions
        for feature in _features(text):
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self._dimensions
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]
