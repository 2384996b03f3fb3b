"""Choosing a provider in config.yaml: check-config names what each endpoint lacks, per-workflow and
knowledge-base overrides route to their own endpoint, and `run` works against an Ollama-style
OpenAI-compatible server with no API key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.cli import main
from hummingbird_agent.config.loading import load_config
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.models import ModelRequest, build_model, user_text
from tests.servers import GitLabServer
from tests.servers.anthropic import AnthropicServer
from tests.servers.gemini import text_turn
from tests.servers.openai import OpenAIServer

REPO = Path(__file__).resolve().parents[2]


def write_config(tmp_path: Path, model: dict[str, Any], workflows: dict[str, Any] | None = None,
                 bamboo: dict[str, Any] | None = None, gitlab: dict[str, Any] | None = None) -> Path:
    (tmp_path / "prompt.md").write_text("# Workflow\nAnswer in one line.\n")
    flows = workflows or {"analyze-failures": {}}
    config: dict[str, Any] = {"model": model, "workflows": {
        name: {"description": "d", "prompt": "prompt.md", **extra} for name, extra in flows.items()}}
    if bamboo:
        config["bamboo"] = bamboo
    if gitlab:
        config["gitlab"] = gitlab
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))
    return path


def test_check_config_names_the_missing_key_of_the_chosen_provider(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "present-key")
    path = write_config(tmp_path, {"provider": "anthropic"},
                        {"analyze-failures": {}, "cheap": {"model": {"name": "gpt-4.1-mini", "provider": "openai"}}},
                        {"enabled": True, "provider": "openai"})
    assert main(["check-config", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "model: anthropic at the provider's API (key in ANTHROPIC_API_KEY) - missing: environment variable " \
           "ANTHROPIC_API_KEY is not set" in out
    assert "model: openai at the provider's API (key in OPENAI_API_KEY)\n" in out
    assert "[model claude-sonnet-5, max" in out and "[model gpt-4.1-mini, max" in out
    assert "ANTHROPIC_API_KEY" in next(line for line in out.splitlines() if line.startswith("missing env vars"))


def test_vertex_and_local_servers_need_no_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, {"provider": "gemini", "vertex_project": "p1", "vertex_location": "europe-west1"},
                        {"a": {}, "b": {"model": {"name": "llama3.1:8b", "provider": "openai",
                                                  "base_url": "http://127.0.0.1:11434/v1"}}})
    assert main(["check-config", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "model: gemini at Vertex AI p1/europe-west1 (Application Default Credentials)" in out
    assert "model: openai at http://127.0.0.1:11434/v1 (no API key)" in out
    assert "missing:" not in out


async def test_workflow_and_knowledge_base_overrides_reach_their_own_endpoint(
        tmp_path: Path, anthropic_server: AnthropicServer, openai_server: OpenAIServer) -> None:
    path = write_config(
        tmp_path, {"provider": "anthropic", "base_url": anthropic_server.url, "api_key_env": "KEY"},
        {"deep": {}, "cheap": {"model": {"name": "gpt-cheap", "provider": "openai",
                                         "base_url": f"{openai_server.url}/v1", "api_key_env": "KEY"}}},
        {"enabled": True, "model": "claude-kb", "base_url": f"{openai_server.url}/v1", "api_key_env": "KEY"})
    loaded = load_config(path, {"KEY": "test-key", "LLM_PROVIDER": "openai", "LLM_MODEL": "gpt-kb"})
    assert (loaded.config.bamboo.provider, loaded.config.bamboo.model) == ("openai", "gpt-kb")  # the env wins
    model = build_model(loaded)
    anthropic_server.script(text_turn("from claude"))
    openai_server.script(text_turn("from openai"), text_turn("kb from openai"))
    try:
        assert (await model.generate(ModelRequest("claude-sonnet-5", "s", [user_text("x")]))).text == "from claude"
        assert (await model.generate(ModelRequest("gpt-cheap", "s", [user_text("x")]))).text == "from openai"
        assert (await model.generate(ModelRequest("gpt-kb", "s", [user_text("x")]))).text == "kb from openai"
    finally:
        await model.aclose()
    assert [c.model for c in openai_server.generate_calls] == ["gpt-cheap", "gpt-kb"]


def test_one_model_name_on_two_endpoints_is_a_config_error(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"provider": "openai", "base_url": "http://127.0.0.1:1/v1"},
                        {"a": {"model": "m"}, "b": {"model": {"name": "m", "base_url": "http://127.0.0.1:2/v1"}}})
    with pytest.raises(ConfigError, match="'m' is configured on two different providers or endpoints"):
        build_model(load_config(path, {}))


def test_run_against_an_ollama_style_server_with_no_api_key(tmp_path: Path, gitlab_server: GitLabServer) -> None:
    gitlab_server.add_project(1, "g/p")  # `run` reads the MR before the model is called
    gitlab_server.add_mr(1, 1)
    with OpenAIServer(api_key=None) as ollama:
        ollama.script(text_turn("The unit-tests job failed on a missing symbol."))
        path = write_config(tmp_path, {"provider": "openai", "base_url": f"{ollama.url}/v1"},
                            {"analyze-failures": {"model": "llama3.1:8b"}}, gitlab={"url": gitlab_server.url})
        cmd = [sys.executable, "-m", "hummingbird_agent", "run", "analyze-failures", "--project", "g/p", "--mr", "1",
               "--config", str(path)]
        result = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
                                env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                     "HUMMINGBIRD_GITLAB_TOKEN": gitlab_server.bot_token})
        assert result.returncode == 0, result.stderr
        assert "The unit-tests job failed on a missing symbol." in result.stdout
        [call] = ollama.generate_calls
        assert call.model == "llama3.1:8b"
        assert ollama.requests[0].header("Authorization") == "Bearer no-key"  # no key exists to leak


@pytest.mark.parametrize(("served", "expected"), [(8192, 8192), (None, None)])
async def test_the_knowledge_base_reads_an_ollama_models_context_window(
        tmp_path: Path, served: int | None, expected: int | None) -> None:
    with OpenAIServer(api_key=None, context_window=served) as ollama:
        path = write_config(tmp_path, {"provider": "openai", "base_url": f"{ollama.url}/v1"},
                            bamboo={"enabled": True, "model": "llama3.1:8b"})
        model = build_model(load_config(path, {}))
        try:
            llm = JsonLLM(ModelText(model, "llama3.1:8b"))
            assert await llm.context_window() == expected
            other = JsonLLM(ModelText(model, "qwen2.5:7b"))  # not running: /api/show's num_ctx
            assert await other.context_window() == expected
        finally:
            await model.aclose()


def test_the_local_only_example_needs_no_model_key(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["check-config", "--config", str(REPO / "config.local-ollama.yaml")]) == 0
    out = capsys.readouterr().out
    assert "model: openai at http://127.0.0.1:11434/v1 (no API key)" in out and "missing:" not in out
    assert "queues: embedded; sessions: local; sandbox: podman" in out
    missing = next(line for line in out.splitlines() if line.startswith("missing env vars"))
    assert "OPENAI_API_KEY" not in missing
