"""Deterministic feature-hashing embedder: words and character trigrams, signed buckets, L2-normalised.

No model and no I/O: equal texts give equal vectors in every process, and texts sharing words score
high, which is what tests and the embedded default need.
"""

from __future__ import annotations

import hashlib
import math
import re

from hummingbird_agent import budgets

_WORD = re.compile(r"[a-z0-9_]+")


def _features(text: str) -> list[str]:
    words = _WORD.findall(text.lower())
    grams = [f"#{w[i:i + 3]}" for w in words for i in range(max(len(w) - 2, 1))]
    return words + grams


class HashingEmbedder:
    def __init__(self, dimensions: int) -> None:
        self._dimensions = dimensions
        # feature -> (bucket, sign): words and trigrams repeat across texts, and hashing each costs more
        # than looking it up. Bounded: past the limit, new features are hashed every time.
        self._slots: dict[str, tuple[int, float]] = {}

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def _slot(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        slot = (int.from_bytes(digest[:4], "little") % self._dimensions, 1.0 if digest[4] & 1 else -1.0)
        if len(self._slots) < budgets.HASHING_EMBEDDER_CACHED_FEATURES:
            self._slots[feature] = slot
        return slot

    def embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self._dimensions
        slots = self._slots
        for feature in _features(text):
            bucket, sign = slots.get(feature) or self._slot(feature)
            vector[bucket] += sign
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]
