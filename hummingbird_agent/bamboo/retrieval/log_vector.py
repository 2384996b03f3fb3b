"""A failure's whole log as one vector: what the incident's log says beyond its excerpt (the job's
steps, the tests that ran, the tool versions), so a new failure finds past incidents of the same job
going wrong the same way even when their excerpts differ. The accumulator stores one per incident
(section "Log", no text kept); the diagnosis searches them with the new failure's logs.
"""

from __future__ import annotations

from collections.abc import Mapping

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.embeddings import Embedder
from hummingbird_agent.bamboo.stores.base import VectorStore
from hummingbird_agent.logs import signature

LOG_SECTION = "Log"


def log_text(logs: Mapping[str, str], limit: int = budgets.BAMBOO_LOG_VECTOR_CHARS) -> str:
    """The logs' distinct normalised lines, newest first, up to `limit` characters: repeats (progress
    lines, retries) count once and volatile tokens (times, ids) are masked, so two runs of one job
    going wrong the same way read alike; newest first because a failure's lines are near the end and
    a semantic embedder reads only the start of a long text."""
    seen: dict[str, None] = {}
    size = 0
    for text in logs.values():
        for line in reversed(text.splitlines()):
            name = signature(line)[: budgets.BAMBOO_SYMPTOM_MAX_CHARS]
            if not name or name in seen:
                continue
            size += len(name) + 1
            if size > limit:
                return "\n".join(seen)
            seen[name] = None
    return "\n".join(seen)


async def log_scores(vectors: VectorStore, embedder: Embedder, logs: Mapping[str, str],
                     exclude: str = "") -> dict[str, float]:
    """Incident id -> cosine of its stored whole-log vector with these logs' (the closest ones only), scaled
    by how comparable the two texts' sizes are: a past incident learned from an excerpt alone, set against
    a whole log, says how many of its lines the log holds, not that the two jobs ran alike."""
    text = log_text(logs)
    if not text:
        return {}
    lines = text.count("\n") + 1
    [vector] = await embedder.embed([text])
    hits = await vectors.search(vector, LOG_SECTION, budgets.BAMBOO_LOG_VECTOR_HITS)
    best: dict[str, float] = {}
    for hit in hits:
        gid = str(hit.payload.get("incident_id", ""))
        stored = int(hit.payload.get("lines") or lines)
        if gid and gid != exclude:
            best[gid] = max(best.get(gid, 0.0), hit.score * min(stored, lines) / max(stored, lines))
    return best


def log_payload(text: str) -> dict[str, object]:
    """What a whole-log vector's point keeps besides the vector: its size in lines, never the text."""
    return {"section": LOG_SECTION, "name": LOG_SECTION, "content": "", "lines": text.count("\n") + 1}
