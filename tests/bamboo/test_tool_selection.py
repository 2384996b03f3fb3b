"""Tool-list bounding: budgeted rendering, the full-schema cap and two-source retrieval (local Qdrant), and a
Qdrant server gone away (a server-mode store opened on the fake Qdrant, which then stops)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.explore.tool_selection import (
    ToolSelector,
    estimate_tokens,
    full_block,
    render_tool_block,
    render_tools,
    tool_budget,
)
from hummingbird_agent.bamboo.mcp import McpTool
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from tests.servers.qdrant import QdrantServer

SYSTEM = "You write Python orchestration code. " * 20
USER = "## Gaps\n- the failing job's npm registry timeout\n## Tools\n"
PROJECT = "g/app"  # whose past investigations the selector ranks by
AREAS = ["kubernetes pod", "s3 bucket", "dns zone", "grafana dashboard", "jira ticket", "ldap group",
         "vault secret", "helm release", "kafka topic", "postgres table"]


def catalogue(n: int = 300) -> list[McpTool]:
    tools = []
    for i in range(n):
        area = AREAS[i % len(AREAS)]
        params = {"type": "object", "properties": {f"{area.split()[0]}_id": {"type": "string"},
                                                   "verbose": {"type": "boolean"}}}
        tools.append(McpTool(f"tool_{i:03d}", f"Describe a {area} number {i}: status, owner, history.", params,
                             True, "ext"))
    tools.append(McpTool("npm_registry_probe", "Probe the npm registry mirror: latency and recent ETIMEDOUT "
                         "errors for a package.", {"type": "object", "properties": {"package": {"type": "string"}}},
                         True, "ext"))
    return tools


@pytest_asyncio.fixture
async def selector() -> AsyncIterator[ToolSelector]:
    store = QdrantVectorStore("tools", 256, path=":memory:")
    await store.open()
    yield ToolSelector(store, HashingEmbedder(256), namespace="ns1", projects=frozenset({PROJECT}))
    await store.aclose()


def test_small_catalogue_renders_every_full_schema() -> None:
    tools = catalogue(5)
    text, omitted = render_tools(tools, {t.name for t in tools}, 10_000)
    assert omitted == [] and all(full_block(t) in text for t in tools)


def test_render_skips_blocks_that_do_not_fit_but_keeps_the_first() -> None:
    tools = catalogue(3)
    text, omitted = render_tools(tools, {t.name for t in tools}, 1)
    assert text.startswith("- tool_000") and omitted == ["tool_001", "tool_002", "npm_registry_probe"]


async def test_300_tools_stay_within_budget_and_the_past_investigations_tool_gets_a_full_schema(
        selector: ToolSelector) -> None:
    tools = catalogue()
    await selector.remember("incident-1", "npm ERR! code ETIMEDOUT reaching the npm registry", ["tool_217"],
                            project=PROJECT)
    await selector.remember("incident-2", "disk full on the runner", ["tool_005"], project=PROJECT)
    window = 8000
    budget = tool_budget(window, SYSTEM + USER)
    block, omitted = await render_tool_block(tools, "npm registry ETIMEDOUT timeout", budget, selector)
    prompt = SYSTEM + USER + block
    assert estimate_tokens(prompt) <= window - budgets.TOOL_BUDGET_MARGIN
    full = {t.name for t in tools if full_block(t) in block}
    assert "tool_217" in full  # source 1: the tool a similar past investigation used
    assert "npm_registry_probe" in full  # source 2: description matches the symptom (reserved slot)
    ranked = await selector.rank("npm registry ETIMEDOUT timeout", tools)
    assert ranked.index("tool_217") < ranked.index("tool_005")  # the similar investigation comes first
    assert len(full) <= budgets.TOOL_MAX_FULL_SCHEMAS and omitted  # the rest is compact or left out


async def test_cap_applies_even_when_everything_fits(selector: ToolSelector) -> None:
    tools = catalogue(40)
    block, omitted = await render_tool_block(tools, "kubernetes pod status", 1_000_000, selector, max_full=10)
    assert omitted == [] and sum(full_block(t) in block for t in tools) == 10


async def test_namespaces_do_not_mix(selector: ToolSelector) -> None:
    await selector.remember("k", "npm registry timeout", ["tool_217"], project=PROJECT)
    other = ToolSelector(selector.vectors, selector.embedder, namespace="ns2", projects=frozenset({PROJECT}))
    ranked = await other.rank("npm registry timeout", catalogue(300))
    assert ranked[0] != "tool_217" and "tool_217" in await selector.rank("npm registry timeout", catalogue(300))


async def test_retrieval_unavailable_degrades_to_a_compact_budgeted_list(caplog: pytest.LogCaptureFixture) -> None:
    tools = catalogue()
    with QdrantServer() as qdrant:
        store = QdrantVectorStore("tools", 64, url=qdrant.url)
        await store.open()
    assert set(qdrant.collections["tools"]["indexes"]) == {"section", "incident_id", "project"}
    try:  # the server has gone away: the selector's first write meets a refused connection
        selector = ToolSelector(store, HashingEmbedder(64), namespace="x")
        block, omitted = await render_tool_block(tools, "npm", 2000, selector)
    finally:
        await store.aclose()
    assert estimate_tokens(block) <= 2000 and omitted and "schema:" not in block
    assert "tool retrieval unavailable" in caplog.text and "qdrant replace: ConnectError" in caplog.text
