"""The strategies' source-navigator hook (seed: `ExtractionStrategy.source_navigator().navigate()`): the panda
strategy navigates the PanDA source through its offline source index; its answer is the prefetch hint
"source code analysis" (a failed navigation logs a warning and leaves only that entry out) and the explorer's
navigate_source tool. A strategy without the hook, or panda without a built index, has no navigator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.factory import NAVIGATE_SOURCE, build_explorer, build_stores, strategy_clients
from hummingbird_agent.bamboo.panda.index import PandaIndex
from hummingbird_agent.bamboo.panda.tools import PandaSupport
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry, source_navigator_of
from hummingbird_agent.bamboo.strategies.panda import SOURCE_HINT, PandaStrategy
from hummingbird_agent.config.loading import load_config
from tests.bamboo.fakes import uncalled_llm
from tests.bamboo.panda_fixtures import indexes

ERROR = IncidentInput("", {"jediTaskID": 7, "status": "exhausted", "errorDialog": "Insufficient memory at sites"})
RAISED_AT = "pandajedi/jedibrokerage/AtlasAnalJobBroker.py:41"


def panda(support: PandaSupport | None) -> PandaStrategy:
    return PandaStrategy(StrategyDeps(uncalled_llm(), panda=support))


async def test_panda_navigates_its_source_index(tmp_path: Path) -> None:
    docs, source, _ = indexes(tmp_path)
    navigator = source_navigator_of(panda(PandaSupport(None, docs, source)))
    assert navigator is not None
    answer = await navigator.navigate("why does brokerage say Insufficient memory at sites?")
    assert answer.startswith(f"{RAISED_AT}\n") and "Insufficient memory at sites" in answer
    assert await navigator.navigate("zzzz qqqq") == ""


def test_no_hook_or_no_index_means_no_navigator(tmp_path: Path) -> None:
    docs, _, _ = indexes(tmp_path)
    assert source_navigator_of(panda(None)) is None
    assert source_navigator_of(panda(PandaSupport(None, docs, PandaIndex(tmp_path / "unbuilt.json")))) is None
    gitlab = default_registry().create("gitlab_ci", StrategyDeps(uncalled_llm()))
    assert source_navigator_of(gitlab) is None and strategy_clients(gitlab)(IncidentInput()) == []


async def test_a_failed_navigation_leaves_only_the_source_hint_out(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    docs, _, _ = indexes(tmp_path)
    (tmp_path / "source.json").write_text("{not json")
    hints = await panda(PandaSupport(None, docs, PandaIndex(tmp_path / "source.json"))).prefetch_hints(ERROR)
    assert hints and all(key.startswith("doc ") for key in hints) and SOURCE_HINT not in hints
    assert "panda source navigation failed; no source hint: PanDA source index unavailable" in caplog.text


async def test_the_explorer_offers_the_navigator_as_navigate_source(tmp_path: Path) -> None:
    docs, source, _ = indexes(tmp_path)
    strategy = panda(PandaSupport(None, docs, source))
    clients = strategy_clients(strategy)(ERROR)
    names = [t.name for c in clients for t in c.list_tools()]
    assert NAVIGATE_SOURCE in names and "search_panda_server_source" in names  # its own tools stay
    [navigate] = [c for c in clients if NAVIGATE_SOURCE in {t.name for t in c.list_tools()}]
    answer = await navigate.call(NAVIGATE_SOURCE, {"question": "Insufficient memory at sites"})
    assert answer.startswith(RAISED_AT)
    (tmp_path / "config.yaml").write_text(json.dumps({
        "model": {"provider": "scripted", "script": "turns.json"}, "workflows": {},
        "bamboo": {"enabled": True, "explore": True, "extraction_strategy": "panda",
                   "graph": {"path": "kb/graph"}, "vectors": {"path": "kb/qdrant"}}}))
    (tmp_path / "turns.json").write_text(json.dumps({"turns": [{"text": "{}"}]}))
    loaded = load_config(tmp_path / "config.yaml", environ={})
    explorer = build_explorer(loaded, uncalled_llm(), build_stores(loaded), "bamboo-diagnose",
                              strategy.task_summary, strategy_clients(strategy))
    assert explorer is not None and NAVIGATE_SOURCE in {t.name for t in explorer.available_tools()}
