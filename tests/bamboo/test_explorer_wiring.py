"""The explorer built from config: off by default (no sandbox needed, the hooks say no explorer is
configured); on, the navigator built by the service's builder runs the exploratory hook in a real Podman
sandbox through the knowledge tools, and its capability gaps reach the AnalysisResult. The model the builders
take is the Gemini adapter on the scripted Gemini server, answering by rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.analysis import NO_EXPLORER, AnalysisResult
from hummingbird_agent.bamboo.explore.session import ConfiguredEnricher, read_only_tools
from hummingbird_agent.bamboo.factory import build_accumulator, build_explorer, build_stores
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.service import analyze_incident, build_navigator
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.config.loading import LoadedConfig, load_config
from hummingbird_agent.models.gemini import GeminiModel
from hummingbird_agent.sandbox import PodmanSandbox
from tests.bamboo.fakes import EXTRACT, count, uncalled_llm
from tests.servers import GeminiServer

DIAGNOSE, DRAFT = "You diagnose a new CI failure", "Write a short message"
GAPS, CODE = "You analyse what information is missing", "You write Python orchestration code"
GAP = {"investigation": "check the npm registry status page", "suggested_tool_capability": "read status.npmjs.org"}
INCIDENT = IncidentInput("", {"project": "g/app", "job": "build", "error": "npm ERR! network timeout at registry"})


def rules(system: str, user: str) -> str:
    if system.startswith(EXTRACT):
        return "{}"
    if system.startswith(DIAGNOSE):
        explored = "orchestration:similar" in user
        return json.dumps({"root_cause": "npm registry outage", "confidence": 0.7 if explored else 0.2,
                           "explanation": "explored" if explored else "a guess"})
    if system.startswith(GAPS):
        return json.dumps({"gaps": [{"gap": "whether this timeout was seen before", "resolvable": True}]})
    if system.startswith(CODE):
        code = ("found = await tools.knowledge_similar_incidents(error_lines=['npm ERR! network timeout'])\n"
                "return {'similar': found['note']}")
        return json.dumps({"orchestration_code": code, "capability_gaps": [GAP]})
    if system.startswith(DRAFT):
        return "Your build hit an npm registry timeout."
    raise AssertionError(f"unexpected prompt: {system[:60]}")


def loaded_config(tmp_path: Path, explore: bool) -> LoadedConfig:
    config = {"model": {"provider": "scripted", "script": "turns.json"},
              "sandbox": {"memory_bytes": 512 * 2**20, "workdir_bytes": 64 * 2**20},
              "bamboo": {"enabled": True, "explore": explore, "graph": {"path": "kb/graph"},
                         "vectors": {"path": "kb/qdrant"}, "embeddings": {"dimensions": 64}},
              "workflows": {}}
    (tmp_path / "turns.json").write_text(json.dumps({"turns": [{"text": "{}"}]}))
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    return load_config(tmp_path / "config.yaml", environ={})


def test_explore_is_off_by_default_and_without_stores(tmp_path: Path) -> None:
    (tmp_path / "default.yaml").write_text("workflows: {}\n")
    assert load_config(tmp_path / "default.yaml", environ={}).config.bamboo.explore is False
    loaded = loaded_config(tmp_path, explore=True)
    assert build_explorer(loaded, uncalled_llm(), None, "bamboo-diagnose", dict) is None


async def test_explorer_off_the_hooks_report_no_explorer(
        tmp_path: Path, gemini_server: GeminiServer, gemini_model: GeminiModel) -> None:
    loaded = loaded_config(tmp_path, explore=False)
    stores = build_stores(loaded)
    gemini_server.respond_with(rules)
    result = await analyze_incident(build_navigator(loaded, gemini_model, stores), stores, INCIDENT)
    assert f"exploratory investigation skipped: {NO_EXPLORER}" in result.investigation
    assert count(gemini_server, GAPS) == 0 and result.capability_gaps == ()


async def test_explorer_on_before_any_exploration_offers_the_knowledge_tools(
        tmp_path: Path, gemini_server: GeminiServer, gemini_model: GeminiModel, llm: JsonLLM) -> None:
    loaded = loaded_config(tmp_path, explore=True)
    explorer = build_explorer(loaded, llm, build_stores(loaded), "bamboo-accumulate", dict)
    assert isinstance(explorer, ConfiguredEnricher)
    assert {t.name for t in explorer.available_tools()} == {
        "knowledge_similar_incidents", "knowledge_candidate_causes", "knowledge_known_procedures"}
    # The CLI's accumulator is built without touching a sandbox or a store (or the model).
    assert build_accumulator(loaded, gemini_model, build_stores(loaded)) is not None
    assert gemini_server.calls == []


@pytest.mark.podman
async def test_explorer_on_runs_the_exploratory_hook_in_the_sandbox(
        tmp_path: Path, gemini_server: GeminiServer, gemini_model: GeminiModel) -> None:
    loaded = loaded_config(tmp_path, explore=True)
    stores = build_stores(loaded)
    gemini_server.respond_with(rules)
    result = await analyze_incident(build_navigator(loaded, gemini_model, stores), stores, INCIDENT)
    assert count(gemini_server, GAPS) == 1 and count(gemini_server, CODE) == 1
    # The second diagnosis saw what the code returned from the sandbox.
    assert result.confidence == 0.7 and result.explanation.endswith("explored")
    assert result.capability_gaps == (GAP,)
    assert ("capability gap: check the npm registry status page (needs: read status.npmjs.org)"
            in result.render().splitlines())
    assert not any("investigation skipped" in n or "failed" in n for n in result.investigation)
    # The tool-selection vectors live in their own folder, closed again after the exploration.
    assert (tmp_path / "kb" / "qdrant_tools").is_dir()


def test_render_shows_capability_gaps() -> None:
    result = AnalysisResult("i1", "cause", 0.4, "", "why", (), capability_gaps=(GAP,))
    lines = result.render().splitlines()
    assert "capability gap: check the npm registry status page (needs: read status.npmjs.org)" in lines
    assert result.gap_lines() == [lines[3]]
    assert "capability gap" not in AnalysisResult("i1", "cause", 0.4, "", "why", ()).render()


def test_builtin_tools_are_the_workflows_data_sources_and_the_knowledge_tools(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("guidance")
    (tmp_path / "config.yaml").write_text(
        "bamboo: {enabled: true, explore: true}\n"
        "workflows: {bamboo-diagnose: {description: d, prompt: p.md, engine: bamboo-diagnose,\n"
        "            data_sources: {testing_farm: {api_url: 'http://127.0.0.1:9'}}}}\n")
    loaded = load_config(tmp_path / "config.yaml", environ={})
    tools = read_only_tools(loaded, "bamboo-diagnose", build_stores(loaded), PodmanSandbox(loaded.config.sandbox))
    names = {t.name for t in tools}
    assert {"tf_get_results", "tf_get_request_status", "knowledge_similar_incidents"} <= names
    assert all(t.read_only for t in tools)
    assert {t.name for t in read_only_tools(loaded, "no-such-workflow", build_stores(loaded),
                                            PodmanSandbox(loaded.config.sandbox))} == {
        "knowledge_similar_incidents", "knowledge_candidate_causes", "knowledge_known_procedures"}
