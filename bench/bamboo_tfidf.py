"""Baseline rankers of bench/bamboo_retrieval.py: same-project TF-IDF over learned texts, and AUROC."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"[a-z][a-z0-9_]{2,}")


def _tf(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.lower()))


class TfIdf:
    """Learned (project, cause, text) triples; a new text ranks its project's causes by the best cosine
    of any learned text of that cause (IDF over all learned texts)."""

    def __init__(self, learned: Sequence[tuple[str, str, str]]) -> None:
        tfs = [(project, cause, _tf(text)) for project, cause, text in learned]
        self._df: Counter[str] = Counter(w for _, _, tf in tfs for w in tf)
        self._total = len(tfs)
        self._learned = [(project, cause, self._vector(tf)) for project, cause, tf in tfs]

    def _vector(self, tf: Counter[str]) -> dict[str, float]:
        v = {w: (1 + math.log(c)) * math.log((1 + self._total) / (1 + self._df[w])) for w, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {w: x / norm for w, x in v.items()}

    def scores(self, project: str, text: str) -> dict[str, float]:
        """{cause of `project`: the best cosine of `text` with any learned text of that cause}."""
        query = self._vector(_tf(text))
        best: dict[str, float] = {}
        for owner, cause, vector in self._learned:
            if owner == project:
                score = sum(x * vector.get(w, 0.0) for w, x in query.items())
                best[cause] = max(best.get(cause, 0.0), score)
        return best

    def rank(self, project: str, text: str) -> tuple[list[str], float]:
        """(causes of `project`, best first; the best cosine)."""
        best = self.scores(project, text)
        ranked = ranked_by(best)
        return ranked, best[ranked[0]] if ranked else 0.0


def ranked_by(scores: dict[str, float]) -> list[str]:
    """Causes by score, best first; ties by name."""
    return sorted(scores, key=lambda c: (-scores[c], c))


def auroc(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """P(score of a positive > score of a negative), ties counting half; 0.5 when a class is empty."""
    pos = [s for s, p in zip(scores, positive, strict=True) if p]
    neg = [s for s, p in zip(scores, positive, strict=True) if not p]
    if not pos or not neg:
        return 0.5
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg)
    return wins / (len(pos) * len(neg))
