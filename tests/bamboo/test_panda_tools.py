"""The 14 PanDA tools through the builtin MCP client and the real HTTP adapter against the fake PanDA
server: results, expired logs, 5xx retried, slow answers and refused credentials as one-line errors, and
no credential in any result, error or log line."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent.bamboo.mcp import ToolCallError
from hummingbird_agent.bamboo.panda.catalogue import CATALOGUE, panda_client, task_data_tools, tool_defs
from hummingbird_agent.bamboo.panda.tools import PandaSupport
from tests.bamboo.panda_fixtures import PROXY, TOKEN, panda, support, task
from tests.servers.panda import PandaServer

__all__ = ["panda"]


async def call(server: PandaServer, tmp: Path, name: str, args: dict[str, Any] | None = None, **kw: Any) -> Any:
    return await panda_client(support(server, tmp, **kw), task(server)).call(name, args or {})


def test_catalogue_has_the_14_read_only_tools(panda: PandaServer, tmp_path: Path) -> None:
    defs = tool_defs(support(panda, tmp_path), task(panda))
    assert len(CATALOGUE) == 14 and {d.name for d in defs} == set(CATALOGUE)
    assert all(d.read_only for d in defs)
    # task_data is injected, never a parameter the model fills in.
    assert all("task" not in d.parameters["properties"] and "task_data" not in d.parameters["properties"]
               for d in defs)
    assert task_data_tools() >= {"get_task_jobs_summary", "find_similar_successful_tasks",
                                 "compare_failed_vs_successful_job_logs"}
    # Without a server or indexes only what can work is offered.
    assert [d.name for d in tool_defs(PandaSupport(None), {})] == ["fetch_cli_options"]


async def test_task_and_job_tools(panda: PandaServer, tmp_path: Path) -> None:
    linked = await call(panda, tmp_path, "fetch_linked_log_files")
    assert list(linked) == [f"{panda.url}/logs/brokerage/1001.txt"]
    assert "skip site=CERN-PROD" in next(iter(linked.values()))
    assert (await call(panda, tmp_path, "get_parent_task", {"retry_id": 1000}))["jediTaskID"] == 1000
    assert await call(panda, tmp_path, "get_parent_task", {"retry_id": 4242}) is None
    # 1000's retryID points back to 1001: the chain stops instead of cycling.
    chain = await call(panda, tmp_path, "get_retry_chain", {"max_depth": 5})
    assert [c["jediTaskID"] for c in chain] == [1000]
    summary = await call(panda, tmp_path, "get_task_jobs_summary")
    assert summary["status_counts"] == {"failed": 3, "finished": 1}
    assert summary["top_errors"][0] == {"diag": "Payload exceeded memory limit", "count": 2}
    assert summary["failed_job_ids"] == [5001, 5002, 5003]
    scouts = await call(panda, tmp_path, "get_scout_job_details", {"max_jobs": 5})
    assert [j["PandaID"] for j in scouts] == [5001, 5003]  # the scout, then one job per distinct pilot error
    assert scouts[0]["maxPSS"] == 3_900_000 and "memory_leak" in scouts[0]
    datasets = await call(panda, tmp_path, "get_task_input_datasets")
    assert datasets == [{"name": "data24:data24.RAW", "id": 77, "files": 2,
                         "file_status": {"ready": 1, "failed": 1}}]
    similar = await call(panda, tmp_path, "find_similar_successful_tasks", {"n_tasks": 10})
    assert [t["jediTaskID"] for t in similar["tasks"]] == [900]  # 901 runs on another architecture
    assert "architecture" in similar["matched_on"]


async def test_log_tools(panda: PandaServer, tmp_path: Path) -> None:
    failed = await call(panda, tmp_path, "get_failed_job_log_summary")
    assert failed["PandaID"] == 5001 and "Running step RAWtoESD" in failed["last_action"]
    assert failed["last_timestamp"] == "2026-11-20T09:59:59"
    compared = await call(panda, tmp_path, "compare_failed_vs_successful_job_logs", {"reference_task_id": 900})
    assert compared["truncated"] is True and "Running step RAWtoESD" in compared["suspected_step"]
    assert compared["step_duration_s"] == 3539.0
    assert "Running step ESDtoAOD" in compared["expected_next"][0]
    assert (await call(panda, tmp_path, "summarize_job_log", {"panda_id": 6001}))["last_action"].endswith("done")
    with pytest.raises(ToolCallError, match="expired"):
        await call(panda, tmp_path, "summarize_job_log", {"panda_id": 5002})


async def test_search_brokerage_and_cli_tools(panda: PandaServer, tmp_path: Path) -> None:
    docs = await call(panda, tmp_path, "search_panda_docs", {"query": "task exhausted retry limit"})
    assert docs[0]["title"] == "Task status exhausted" and docs[0]["path"] == "task_status.md"
    source = await call(panda, tmp_path, "search_panda_server_source", {"query": "Insufficient memory at sites"})
    assert source[0]["path"] == "pandajedi/jedibrokerage/AtlasAnalJobBroker.py" and source[0]["line"] == 41
    brokerage = await call(panda, tmp_path, "fetch_brokerage_context")
    assert "skip site=CERN-PROD" in brokerage["summary"] and "site=ANALY_CERN" in brokerage["summary"]
    assert brokerage["doc_path"] == "brokerage.rst"
    assert "--memory" in (await call(panda, tmp_path, "fetch_cli_options", {"component": "prun"}))["prun"]
    assert "unavailable" in (await call(panda, tmp_path, "fetch_cli_options", {"component": "pathena"}))["pathena"]
    with pytest.raises(ToolCallError, match="invalid arguments"):
        await call(panda, tmp_path, "fetch_cli_options", {"component": "rm"})


async def test_5xx_is_retried_then_a_persistent_one_is_one_line(panda: PandaServer, tmp_path: Path) -> None:
    panda.fail_next(1, 503, path="get_details")
    assert (await call(panda, tmp_path, "get_parent_task", {"retry_id": 1000}))["jediTaskID"] == 1000
    assert len(panda.requests_to("get_details")) == 2
    panda.fail_next(10, 500, path="get_details")
    with pytest.raises(ToolCallError, match="HTTP 500") as err:
        await call(panda, tmp_path, "get_parent_task", {"retry_id": 1000})
    assert "\n" not in str(err.value)


async def test_slow_answer_and_refused_credentials(panda: PandaServer, tmp_path: Path) -> None:
    panda.delay_s = 1.5
    with pytest.raises(ToolCallError, match="no answer within 0.2 s"):
        await call(panda, tmp_path, "get_task_jobs_summary", timeout_s=0.2)
    panda.delay_s = 0.0
    with pytest.raises(ToolCallError, match="credentials refused"):
        await call(panda, tmp_path, "get_task_jobs_summary", token="wrong-token")


async def test_linked_logs_off_the_panda_hosts_are_not_fetched(panda: PandaServer, tmp_path: Path) -> None:
    data = task(panda) | {"errorDialog": '<a href="http://198.51.100.7:9/steal">log</a>'}
    with pytest.raises(ToolCallError, match="not on the PanDA API or log host"):
        await panda_client(support(panda, tmp_path), data).call("fetch_linked_log_files", {})
    assert not panda.requests_to("steal")


async def test_credentials_never_reach_results_errors_or_logs(panda: PandaServer, tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = panda_client(support(panda, tmp_path), task(panda))
    args = {"get_parent_task": {"retry_id": 1000}, "summarize_job_log": {"panda_id": 5002},
            "compare_failed_vs_successful_job_logs": {"reference_task_id": 900},
            "search_panda_docs": {"query": "memory"}, "search_panda_server_source": {"query": "memory"},
            "fetch_cli_options": {"component": "prun"}}
    panda.fail_next(20, 500, path="get_datasets")
    seen: list[str] = [repr(client), repr(support(panda, tmp_path))]
    for name in CATALOGUE:
        try:
            seen.append(json.dumps(await client.call(name, args.get(name, {})), default=str))
        except ToolCallError as exc:
            seen.append(str(exc))
    text = "\n".join(seen) + caplog.text
    assert "expired" in text and "HTTP 500" in text  # the failures were exercised
    assert TOKEN not in text and PROXY not in text
    # ...while every request did carry the token to the PanDA server.
    assert all(r.header("Authorization") == f"Bearer {TOKEN}" for r in panda.requests)


def test_the_reviewer_sees_the_panda_tools_before_any_exploration(panda: PandaServer, tmp_path: Path) -> None:
    from hummingbird_agent.bamboo.factory import build_explorer, build_panda_support, build_stores
    from hummingbird_agent.bamboo.strategies.base import StrategyDeps, default_registry
    from hummingbird_agent.config.loading import load_config
    from tests.bamboo.fakes import uncalled_llm

    (tmp_path / "config.yaml").write_text(json.dumps({
        "workflows": {}, "bamboo": {"enabled": True, "explore": True, "extraction_strategy": "panda",
                                    "embeddings": {"dimensions": 32}, "panda": {"url": panda.api_url}}}))
    loaded = load_config(tmp_path / "config.yaml", environ={})
    llm = uncalled_llm()
    strategy = default_registry().create("panda", StrategyDeps(llm, panda=build_panda_support(loaded)))
    explorer = build_explorer(loaded, llm, build_stores(loaded), "bamboo-accumulate", strategy.task_summary,
                              strategy.builtin_clients)  # type: ignore[attr-defined]
    assert explorer is not None
    names = {t.name for t in explorer.available_tools()}
    assert {"get_task_jobs_summary", "find_similar_successful_tasks", "knowledge_similar_incidents"} <= names
    assert not panda.requests  # listing the tools reads nothing from PanDA
    gitlab = default_registry().create("gitlab_ci", StrategyDeps(llm))
    assert not hasattr(gitlab, "builtin_clients")  # gitlab_ci keeps its own data-source tools
