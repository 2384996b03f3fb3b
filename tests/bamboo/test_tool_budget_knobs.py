"""The spec's tool-bounding knobs are config keys of `bamboo` with the spec's environment names as overrides
(LLM_CONTEXT_WINDOW, TOOL_BUDGET_MARGIN, TOOL_MAX_FULL_SCHEMAS, TOOL_RETRIEVAL_CANDIDATE_K, TOOL_RESERVED_EXPLORE):
defaults as the seed's, a bad value one line naming the variable or key, and the explorer built from config
uses them (window, margin, full-schema cap, ranking pool, reserved slots); check-config shows them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.explore.prompt_fit import ToolBounds
from hummingbird_agent.bamboo.explore.session import ConfiguredEnricher
from hummingbird_agent.bamboo.factory import build_explorer, build_stores
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.cli import main
from hummingbird_agent.config.loading import LoadedConfig, load_config
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.models import build_model
from tests.servers.openai import OpenAIServer

KNOBS = {"LLM_CONTEXT_WINDOW": "4096", "TOOL_BUDGET_MARGIN": "300", "TOOL_MAX_FULL_SCHEMAS": "7",
         "TOOL_RETRIEVAL_CANDIDATE_K": "0", "TOOL_RESERVED_EXPLORE": "9"}


def write(tmp_path: Path, model: dict[str, str] | None = None, **bamboo: object) -> Path:
    (tmp_path / "config.yaml").write_text(json.dumps({
        "model": model or {"provider": "gemini", "api_key_env": "GEMINI_API_KEY"}, "workflows": {},
        "bamboo": {"enabled": True, "explore": True, "graph": {"path": "kb/graph"}, "vectors": {"path": "kb/qdrant"},
                   **bamboo}}))
    return tmp_path / "config.yaml"


def explorer_of(loaded: LoadedConfig, llm: JsonLLM) -> ConfiguredEnricher:
    explorer = build_explorer(loaded, llm, build_stores(loaded), "bamboo-diagnose", dict)
    assert explorer is not None
    return explorer


def test_defaults_are_the_seeds(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path), environ={}).config.bamboo
    assert (cfg.llm_context_window, cfg.tool_budget_margin, cfg.tool_max_full_schemas, cfg.tool_retrieval_candidate_k,
            cfg.tool_reserved_explore) == (0, 1024, 25, 0, budgets.TOOL_RESERVED_EXPLORE)


def test_the_spec_environment_names_override_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, llm_context_window=32000, tool_max_full_schemas=12, tool_retrieval_candidate_k=50)
    cfg = load_config(path, environ=KNOBS).config.bamboo
    assert (cfg.llm_context_window, cfg.tool_budget_margin, cfg.tool_max_full_schemas, cfg.tool_retrieval_candidate_k,
            cfg.tool_reserved_explore) == (4096, 300, 7, 0, 9)
    assert load_config(path, environ={}).config.bamboo.tool_max_full_schemas == 12  # the file's value, unset


@pytest.mark.parametrize(("environ", "message"), [
    ({"TOOL_BUDGET_MARGIN": "1k"}, "TOOL_BUDGET_MARGIN: must be a whole number"),
    ({"TOOL_MAX_FULL_SCHEMAS": "2.5"}, "TOOL_MAX_FULL_SCHEMAS: must be a whole number"),
    ({"LLM_CONTEXT_WINDOW": "-1"}, "bamboo.llm_context_window: must be a whole number from 0 to"),
    ({"TOOL_MAX_FULL_SCHEMAS": "0"}, "bamboo.tool_max_full_schemas: must be a whole number from 1 to"),
])
def test_a_bad_value_is_one_line(tmp_path: Path, environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_config(write(tmp_path), environ=environ)


async def test_the_explorer_uses_the_knobs(tmp_path: Path, llm: JsonLLM) -> None:
    explorer = explorer_of(load_config(write(tmp_path), environ=KNOBS), llm)
    assert await explorer.tool_bounds() == ToolBounds(4096, 300, 7)
    selector = explorer.selector
    assert (selector.max_full, selector.candidate_k, selector.reserved) == (7, 40, 9)  # pool auto: max(40, 3 x 7)
    wide = explorer_of(load_config(write(tmp_path), environ={**KNOBS, "TOOL_MAX_FULL_SCHEMAS": "20",
                                                             "TOOL_RETRIEVAL_CANDIDATE_K": "0"}), llm)
    assert wide.selector.candidate_k == 60
    pinned = explorer_of(load_config(write(tmp_path), environ={"TOOL_RETRIEVAL_CANDIDATE_K": "15"}), llm)
    assert pinned.selector.candidate_k == 15


async def test_without_a_window_the_default_is_used(tmp_path: Path, llm: JsonLLM) -> None:
    # The Gemini adapter reports no served window (only an Ollama server does): the budgets' default.
    explorer = explorer_of(load_config(write(tmp_path), environ={}), llm)
    assert await explorer.tool_bounds() == ToolBounds(budgets.TOOL_CONTEXT_WINDOW_TOKENS, 1024, 25)


async def test_an_ollama_servers_window_is_used_unless_one_is_set(tmp_path: Path) -> None:
    with OpenAIServer(api_key=None, context_window=8192) as ollama:
        model = {"provider": "openai", "base_url": f"{ollama.url}/v1"}
        for environ, window in (({}, 8192), ({"LLM_CONTEXT_WINDOW": "2048"}, 2048)):
            loaded = load_config(write(tmp_path, model), environ=environ)
            served = build_model(loaded)
            try:
                llm = JsonLLM(ModelText(served, "llama3.1:8b"))
                assert (await explorer_of(loaded, llm).tool_bounds()).window_tokens == window
            finally:
                await served.aclose()


def test_check_config_shows_the_strategy_and_the_knobs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**KNOBS, "GEMINI_API_KEY": "g" * 20}.items():
        monkeypatch.setenv(name, value)
    assert main(["check-config", "--config", str(write(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "  extraction strategy: gitlab_ci (built in)" in out
    assert ("  tool budget: context window 4096 tokens, margin 300 tokens, full schemas 7, retrieval pool 40 (auto), "
            "reserved 7; prompt tokens: Gemini countTokens") in out
    monkeypatch.delenv("LLM_CONTEXT_WINDOW")
    monkeypatch.setenv("LLM_PROVIDER", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", "o" * 20)
    assert main(["check-config", "--config", str(write(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "context window auto (the model server's, else 128000 tokens)" in out
    assert "prompt tokens: bytes / 4 (no count API)" in out
