"""Conformance suite of the vector store: Qdrant local mode in memory and on disk (a server is not
available here; the client API is the same)."""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.incident_graph import derive_id
from hummingbird_agent.bamboo.stores.base import VectorPoint
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.errors import ConfigError

EMBED = HashingEmbedder(64)


def point(incident: str, section: str, name: str, text: str) -> VectorPoint:
    return VectorPoint(derive_id(incident, section, name), tuple(EMBED.embed_one(text)),
                       {"section": section, "name": name, "content": text})


@pytest.fixture(params=["memory", "path"])
async def vectors(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[QdrantVectorStore]:
    store = QdrantVectorStore("kb", 64, path=":memory:" if request.param == "memory" else str(tmp_path / "q"))
    await store.open()
    yield store
    await store.aclose()


async def test_replace_is_idempotent_and_drops_stale_points(vectors: QdrantVectorStore) -> None:
    points = [point("A", "Symptom", "s1", "connection refused"), point("A", "Summary", "Summary", "dns")]
    await vectors.replace_incident("A", points)
    await vectors.replace_incident("A", points)
    assert await vectors.count() == 2
    await vectors.replace_incident("A", points[:1])
    assert await vectors.count() == 1 and await vectors.count("Summary") == 0


async def test_batch_replace_matches_one_by_one_and_survives_reopen(tmp_path: Path) -> None:
    store = QdrantVectorStore("kb", 64, path=str(tmp_path / "q"))
    await store.open()
    await store.replace_incidents({"A": [point("A", "Symptom", "s1", "x"), point("A", "Summary", "Summary", "a")],
                                   "B": [point("B", "Summary", "Summary", "b")]})
    await store.aclose()
    store = QdrantVectorStore("kb", 64, path=str(tmp_path / "q"))
    await store.open()  # the stale point of A written before the reopen must still be found and dropped
    await store.replace_incidents({"A": [point("A", "Summary", "Summary", "a2")], "C": []})
    assert await store.count() == 2 and [h.payload["content"] for h in await store.by_incident("A")] == ["a2"]
    await store.aclose()


async def test_search_is_restricted_to_a_section(vectors: QdrantVectorStore) -> None:
    await vectors.replace_incident("A", [point("A", "Symptom", "s", "npm ERR! network timeout"),
                                         point("A", "Cause", "c", "npm registry unreachable")])
    await vectors.replace_incident("B", [point("B", "Symptom", "s", "segmentation fault in test runner")])
    hits = await vectors.search(EMBED.embed_one("npm ERR! network timeout"), "Symptom", 5)
    assert [h.payload["incident_id"] for h in hits] == ["A", "B"] and hits[0].score > 0.99
    assert hits[0].score > hits[1].score
    assert all(h.payload["section"] == "Symptom" for h in hits)
    assert len(await vectors.search(EMBED.embed_one("npm"), None, 5, min_score=0.99)) == 0


async def test_section_search_is_exact_when_other_sections_crowd_the_top(vectors: QdrantVectorStore) -> None:
    texts = {f"I{i}": (f"npm ERR! network timeout {i}", f"release notes of build {i} for {i % 7}") for i in range(60)}
    await vectors.replace_incidents({gid: [point(gid, "Symptom", "s", sym), point(gid, "Summary", "Summary", summ)]
                                     for gid, (sym, summ) in texts.items()})
    await vectors.replace_incident("X", [point("X", "Cause", "c", "registry down")])
    query = EMBED.embed_one("npm ERR! network timeout 3")

    def cosine(text: str) -> float:
        v = EMBED.embed_one(text)
        return sum(a * b for a, b in zip(query, v, strict=True)) / math.sqrt(
            sum(a * a for a in query) * sum(b * b for b in v))

    expected = sorted((round(cosine(summ), 4) for _, summ in texts.values()), reverse=True)[:5]
    hits = await vectors.search(query, "Summary", 5)  # ties may come in any order: compare the scores
    assert [round(h.score, 4) for h in hits] == expected and {h.payload["section"] for h in hits} == {"Summary"}
    assert [h.payload["incident_id"] for h in await vectors.search(query, "Cause", 5)] == ["X"]
    assert await vectors.search(query, "Task_Context", 5) == []


async def test_multi_section_search_gives_each_section_search(vectors: QdrantVectorStore) -> None:
    await vectors.replace_incidents({f"I{i}": [point(f"I{i}", "Symptom", "s", f"npm ERR! network timeout {i}"),
                                               point(f"I{i}", "Summary", "Summary", f"notes of build {i % 9}")]
                                     for i in range(70)})
    await vectors.replace_incident("X", [point("X", "Cause", "c", "npm registry down")])
    queries = [EMBED.embed_one("npm ERR! network timeout 3"), EMBED.embed_one("notes of build 4")]
    sections = ["Symptom", "Cause", "Summary", "Task_Context"]
    found = await vectors.search_sections(queries, sections, 5)
    expected = [await vectors.search(q, s, 5) for q in queries for s in sections]
    assert [[round(h.score, 4) for h in hits] for hits in found] == [[round(h.score, 4) for h in hits]
                                                                     for hits in expected]
    assert [{h.payload["section"] for h in hits} for hits in found[:4]] == [{"Symptom"}, {"Cause"}, {"Summary"}, set()]
    assert set(found[0][0].payload) == {"section", "incident_id", "name", "project"}


async def test_multi_section_hits_name_their_incident_after_a_reopen(tmp_path: Path) -> None:
    store = QdrantVectorStore("kb", 64, path=str(tmp_path / "q"))
    await store.open()
    await store.replace_incident("A", [point("A", "Symptom", "s1", "disk full")])
    await store.aclose()
    store = QdrantVectorStore("kb", 64, path=str(tmp_path / "q"))
    await store.open()
    await store.replace_incident("B", [point("B", "Symptom", "s2", "disk full again")])
    [hits] = await store.search_sections([EMBED.embed_one("disk full")], ["Symptom"], 5)
    assert [h.payload for h in hits] == [{"section": "Symptom", "incident_id": "A", "name": "s1", "project": ""},
                                         {"section": "Symptom", "incident_id": "B", "name": "s2", "project": ""}]
    await store.aclose()


async def test_points_of_one_incident(vectors: QdrantVectorStore) -> None:
    await vectors.replace_incident("A", [point("A", "Symptom", "s", "x"), point("A", "Summary", "Summary", "y")])
    await vectors.replace_incident("B", [point("B", "Summary", "Summary", "z")])
    assert [h.payload["content"] for h in await vectors.by_incident("A", "Summary")] == ["y"]
    assert len(await vectors.by_incident("A")) == 2


async def test_reopening_with_another_vector_size_is_a_config_error(tmp_path: Path) -> None:
    first = QdrantVectorStore("kb", 64, path=str(tmp_path / "q"))
    await first.open()
    await first.aclose()
    second = QdrantVectorStore("kb", 32, path=str(tmp_path / "q"))
    with pytest.raises(ConfigError, match="64-d vectors"):
        await second.open()
    await second.aclose()


def test_needs_a_url_or_a_path() -> None:
    with pytest.raises(ConfigError):
        QdrantVectorStore("kb", 8)


def brute_force(points: dict[str, tuple[str, tuple[float, ...]]], query: list[float], section: str,
                limit: int, min_score: float = 0.0) -> list[tuple[str, float]]:
    """Every point of `section` scored by cosine in Python, best first, ties by id."""
    def cosine(v: tuple[float, ...]) -> float:
        return sum(a * b for a, b in zip(query, v, strict=True)) / math.sqrt(
            sum(a * a for a in query) * sum(b * b for b in v))

    scored = sorted((-cosine(v), pid) for pid, (s, v) in points.items() if s == section)
    return [(pid, -score) for score, pid in scored if -score >= min_score][:limit]


async def test_local_search_equals_brute_force_cosine_across_replaces_and_a_reopen(tmp_path: Path) -> None:
    rng = random.Random(7)
    shared = tuple(rng.gauss(0, 1) for _ in range(64))  # one vector in many incidents: ties, ordered by id

    def incident_points(gid: str, n: int) -> list[VectorPoint]:
        return [VectorPoint(derive_id(gid, section, f"n{k}"),
                            shared if k == 0 and rng.random() < 0.2 else tuple(rng.gauss(0, 1) for _ in range(64)),
                            {"section": section, "name": f"n{k}"})
                for k in range(n) for section in ("Symptom", "Summary")]

    written: dict[str, list[VectorPoint]] = {}
    queries = [[rng.gauss(0, 1) for _ in range(64)] for _ in range(3)] + [list(shared)]

    async def check(store: QdrantVectorStore) -> None:
        points = {p.id: (str(p.payload["section"]), p.vector) for batch in written.values() for p in batch}
        for section in ("Symptom", "Summary", "Cause"):
            for query in queries:
                hits = await store.search(query, section, 9)
                expected = brute_force(points, query, section, 9)
                assert [h.id for h in hits] == [pid for pid, _ in expected]
                assert [h.score for h in hits] == pytest.approx([s for _, s in expected], abs=1e-6)
                assert all(h.payload["section"] == section for h in hits)
                kept = await store.search(query, section, 50, min_score=0.2)
                assert [h.id for h in kept] == [pid for pid, _ in brute_force(points, query, section, 50, 0.2)]
        found = await store.search_sections(queries, ["Symptom", "Cause", "Summary"], 6)
        assert [[h.id for h in hits] for hits in found] == [
            [pid for pid, _ in brute_force(points, q, s, 6)] for q in queries for s in ("Symptom", "Cause", "Summary")]

    store = QdrantVectorStore("kb", 64, path=str(tmp_path / "q"))
    await store.open()
    written = {f"I{i}": incident_points(f"I{i}", 1 + i % 3) for i in range(150)}
    await store.replace_incidents(written)
    await check(store)
    changed = {f"I{i}": incident_points(f"I{i}", i % 2) for i in range(0, 150, 3)}  # fewer points, or none
    await store.replace_incidents(changed)
    written.update(changed)
    await check(store)
    await store.aclose()
    store = QdrantVectorStore("kb", 64, path=str(tmp_path / "q"))
    await store.open()
    await check(store)
    more = {f"J{i}": incident_points(f"J{i}", 2) for i in range(40)}
    await store.replace_incidents(more)
    written.update(more)
    await check(store)
    await store.aclose()


async def test_a_point_written_twice_in_one_batch_is_found_once_with_its_last_vector(
        vectors: QdrantVectorStore) -> None:
    first, second = point("A", "Symptom", "s", "disk full"), point("A", "Symptom", "s", "network timeout")
    await vectors.replace_incident("A", [first, second])
    hits = await vectors.search(EMBED.embed_one("network timeout"), "Symptom", 5)
    assert [(h.id, h.payload["content"]) for h in hits] == [(second.id, "network timeout")]
    assert hits[0].score == pytest.approx(1.0)
