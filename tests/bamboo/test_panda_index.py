"""The offline PanDA indexes (`bamboo index-docs/index-source DIR`) and the panda strategy's prefetch
hints from them: docs for the error, source for its origin, bounded, fail-open."""

from __future__ import annotations

from pathlib import Path

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.factory import build_panda_support
from hummingbird_agent.bamboo.panda.index import PandaIndex, terms
from hummingbird_agent.bamboo.panda.tools import PandaSupport
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps
from hummingbird_agent.bamboo.strategies.panda import SOURCE_HINT, PandaStrategy
from hummingbird_agent.cli import main
from hummingbird_agent.config.loading import load_config
from hummingbird_agent.errors import ConfigError
from tests.bamboo.fakes import uncalled_llm
from tests.bamboo.panda_fixtures import DOCS, SOURCE, indexes, write_tree

ERROR = IncidentInput("", {"jediTaskID": 7, "status": "exhausted",
                           "errorDialog": "Insufficient memory at sites. <a href='x'>log</a> reason=memory"})


def strategy(panda: PandaSupport | None) -> PandaStrategy:
    return PandaStrategy(StrategyDeps(uncalled_llm(), panda=panda))


def test_terms_split_identifiers() -> None:
    assert terms("AtlasAnalJobBroker check_memory") == ["atlasanaljobbroker", "atlas", "anal", "job", "broker",
                                                      "check_memory", "check", "memory"]


async def test_prefetch_hints_give_the_errors_docs_and_source_bounded(tmp_path: Path) -> None:
    docs, source, _ = indexes(tmp_path)
    hints = await strategy(PandaSupport(None, docs, source)).prefetch_hints(ERROR)
    keys = list(hints)
    assert keys[0].startswith("doc ") and not any("API" in k for k in keys)  # API sections are left out
    # Where the error is raised comes from the strategy's source navigator, under the seed's key.
    assert keys[-1] == SOURCE_HINT
    assert hints[SOURCE_HINT].startswith("pandajedi/jedibrokerage/AtlasAnalJobBroker.py:41\n")
    assert "Insufficient memory at sites" in hints[SOURCE_HINT]
    assert sum(len(v) for v in hints.values()) <= budgets.PANDA_HINT_TOTAL_CHARS


async def test_prefetch_hints_fail_open(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert await strategy(None).prefetch_hints(ERROR) == {}
    assert await strategy(PandaSupport(None, PandaIndex(tmp_path / "none.json"))).prefetch_hints(ERROR) == {}
    (tmp_path / "docs.json").write_text("{not json")
    assert await strategy(PandaSupport(None, PandaIndex(tmp_path / "docs.json"))).prefetch_hints(ERROR) == {}
    assert "panda prefetch hints unavailable" in caplog.text


def test_cli_builds_the_indexes_under_the_configured_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.yaml").write_text("workflows: {}\nbamboo: {panda: {index_dir: kb/panda}}\n")
    config = str(tmp_path / "config.yaml")
    assert main(["bamboo", "index-docs", str(write_tree(tmp_path / "docs", DOCS)), "--config", config]) == 0
    assert "index-docs: 4 sections from 2 files" in capsys.readouterr().out
    assert main(["bamboo", "index-source", str(write_tree(tmp_path / "src", SOURCE)), "--config", config]) == 0
    support = build_panda_support(load_config(config, environ={}))
    assert support.client is None and support.docs is not None and support.source is not None
    assert support.docs.path == tmp_path / "kb" / "panda" / "docs.json"
    assert support.source.search("BrokerageError", 1)[0]["path"].endswith("AtlasAnalJobBroker.py")
    assert main(["bamboo", "index-docs", str(tmp_path / "missing"), "--config", config]) == 2
    assert capsys.readouterr().err.strip().endswith("missing: not a directory")


def test_panda_config_names_env_vars_never_values(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("workflows: {}\nbamboo: {panda: {token_env: 'eyJhbGciOi.secret'}}\n")
    with pytest.raises(ConfigError, match="token_env"):
        load_config(tmp_path / "config.yaml", environ={})
    (tmp_path / "config.yaml").write_text(
        "workflows: {}\nbamboo: {enabled: true, panda: {url: 'https://p/api/v1', token_env: PANDA_ID_TOKEN}}\n")
    loaded = load_config(tmp_path / "config.yaml", environ={"PANDA_ID_TOKEN": "tok-12345"})
    assert "tok-12345" in loaded.secret_values()  # scrubbed from logs, errors and Sentry events
    assert "tok-12345" not in repr(build_panda_support(loaded))


def test_log_comparison_tells_a_divergence_from_a_truncation() -> None:
    from hummingbird_agent.bamboo.panda.logs import compare
    from tests.servers.panda import FAILED_LOG, GOOD_LOG

    diverged = FAILED_LOG + "2026-11-20 10:00:10 INFO Running step cleanup after signal\n"
    result = compare(diverged, GOOD_LOG)
    assert result["truncated"] is False and "Running step RAWtoESD" in result["suspected_step"]
    assert "Running step cleanup" in result["failed_after_divergence"][-1]
    assert compare(FAILED_LOG, GOOD_LOG)["truncated"] is True
    nothing = compare("no markers here\n", GOOD_LOG)
    assert nothing["suspected_step"] == "" and nothing["steps_matched"] == 0
