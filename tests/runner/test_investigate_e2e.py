"""`/hummingbird investigate` in the running service (moto + fake GitLab + scripted Gemini server + Podman + a
stdio MCP server with a read-only and a state-changing tool): read-only code runs at once; state-changing code
waits, is refused for a non-member's `approve` and for one naming no proposal, survives a restart of the
service, runs after a Developer+ `approve <id>` (once: a late copy after the same code is proposed again runs
nothing), and never runs when rejected (`reject <id>`: a bare or stale reject drops nothing) or reached under
another name; with another approver required, who wrote or asked for the code cannot approve it; finalize +
confirm store the procedures, cause and resolution once; the next exploration offers the `proc__` tool and ranks
the approved tool first for a similar prompt."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent.bamboo.factory import TOOLS_COLLECTION_SUFFIX, build_stores, build_vector_store
from hummingbird_agent.bamboo.investigate.planner import OVER_BUDGET
from hummingbird_agent.bamboo.service import build_investigation
from hummingbird_agent.bamboo.stores.base import opened
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.models import ScriptedModel
from tests.bamboo.mcp_server import __file__ as SERVER_FILE
from tests.bamboo.test_investigate_cli import proposal_id
from tests.metrics.test_metrics import Samples, listening_url, parse, scrape, value
from tests.runner.harness import (
    DEVELOPER,
    MEMBER,
    OUTSIDER,
    PROJECT,
    PROJECT_ID,
    REPO,
    Service,
    comment,
    reply,
    seed_gitlab,
    start_service,
)
from tests.servers import GeminiServer, GitLabServer, MotoServer

pytestmark = [pytest.mark.podman, pytest.mark.timeout(400)]
QUESTION = "why did runner r1 fail the build?"
PLANNER = "You help an engineer investigate"
READ = ("info = await tools.get_runner_info(runner='r1')\n"
        "known = await tools.knowledge_similar_incidents(error_lines=['No space left on device'])\n"
        "return {'free_disk_gb': info['free_disk_gb'], 'known': known}")
RESTART = "done = await tools.restart_runner(runner='r1')\nreturn {'restart': done}"
ALIAS = "call = getattr(tools, 'restart_' + 'runner')\nreturn {'restart': await call(runner='r2')}"
# The planner's answer to each utterance (the text after "The engineer now says").
SECOND = 43  # another Developer in the thread
ANSWERS = {QUESTION: READ, "restart it": RESTART, "sneak a restart": ALIAS, "restart once more": RESTART}


def planner(system: str, user: str) -> str:
    assert system.startswith(PLANNER), system[:60]
    said = user.split("## The engineer now says\n", 1)[1].split("\n\n## Available tools", 1)[0].strip()
    return json.dumps({"orchestration_code": ANSWERS[said], "capability_gaps": [
        {"investigation": "runner host kernel logs", "suggested_tool_capability": "journalctl reader"}]})


def configure(tmp_path: Path) -> Callable[[dict[str, Any]], None]:
    (tmp_path / "mcp.json").write_text(json.dumps({"servers": [{
        "name": "ci", "command": sys.executable, "args": [SERVER_FILE, "stdio"],
        "env": {"MCP_TEST_MARKER": str(tmp_path / "restarted.txt"), "PYTHONPATH": str(REPO)},
        "read_only_tools": ["^get_runner_info$"], "include_tools": ["get_runner_info", "restart_runner"]}]}))

    def tweak(config: dict[str, Any]) -> None:
        config["bamboo"] = {"enabled": True, "model": "gemini-test", "graph": {"path": str(tmp_path / "graph")},
                            "vectors": {"path": str(tmp_path / "qdrant")},
                            "mcp_servers_config": str(tmp_path / "mcp.json"),
                            "embeddings": {"provider": "hashing", "dimensions": 256}}
        config["sandbox"] = {"backend": "podman", "memory_bytes": 512 * 2**20, "workdir_bytes": 64 * 2**20}
        config["workflows"]["investigate"] = {
            "description": "Investigate", "prompt": str(REPO / "workflows" / "investigate.md"),
            "engine": "bamboo-investigate", "projects": {PROJECT: {}}}
    return tweak


def restarts(tmp_path: Path) -> list[str]:
    marker = tmp_path / "restarted.txt"
    return marker.read_text().splitlines() if marker.exists() else []


async def say(service: Service, thread: str, text: str, author: int | None = None) -> str:
    """Reply in the investigation thread and wait for the bot's answer to it."""
    before = len(service.final_notes())
    service.publish(reply(service, thread, text, *(() if author is None else (author,))))
    await service.wait_for(lambda: len(service.final_notes()) > before, f"the answer to {text!r}")
    return str(service.final_notes()[-1]["body"])


async def test_an_investigation_in_the_mr_thread(tmp_path: Path, gitlab_server: GitLabServer,
                                                 moto_server: MotoServer) -> None:
    seed_gitlab(gitlab_server)
    tweak = configure(tmp_path)
    with GeminiServer() as model:
        model.respond_with(planner)
        async with start_service(tmp_path, gitlab_server, model, moto_server, tweak=tweak) as service:
            service.publish(comment(service, f"/hummingbird investigate {QUESTION}"))
            await service.wait_for(lambda: bool(service.final_notes()), "the first turn")
            first = service.final_notes()[0]["body"]
            assert "It only reads, so it ran at once" in first and '"free_disk_gb": 3' in first
            assert "runner host kernel logs" in first
            thread = service.discussions()[-1]["id"]
            proposal = await say(service, thread, "restart it")
            shown = proposal_id(proposal)
            assert "`restart_runner` **changes state**" in proposal and f"Reply `approve {shown}`" in proposal
            refused = await say(service, thread, f"approve {shown}", OUTSIDER)
            assert "Developer access" in refused and restarts(tmp_path) == []
        # A restart in the middle of the session: the pending proposal is in the saved session.
        async with start_service(tmp_path, gitlab_server, model, moto_server, tweak=tweak) as service:
            bare = await say(service, thread, "approve")  # names no proposal: nothing runs
            assert bare.startswith(f"Name the proposal you approve: reply `approve {shown}`")
            ran = await say(service, thread, f"approve {shown}")
            assert "Approved and ran" in ran and restarts(tmp_path) == ["r1"]
            sneaky = await say(service, thread, "sneak a restart")
            assert "It only reads, so it ran at once" in sneaky and "restart_runner` refused" in sneaky
            again = proposal_id(await say(service, thread, "restart once more"))  # the same code: a new id
            late = await say(service, thread, f"approve {shown}")  # a late copy of the first approval
            assert again != shown and late.startswith("The proposal changed") and restarts(tmp_path) == ["r1"]
            stale = await say(service, thread, f"reject {shown}")  # a late reject of the first showing
            assert stale.startswith("The proposal changed") and f"`{again}`" in stale.splitlines()[0]
            bare_reject = await say(service, thread, "reject")
            assert bare_reject.startswith(f"Name the proposal you reject: reply `reject {again}`")
            assert "Rejected; nothing ran" in await say(service, thread, f"reject {again}")
            assert (await say(service, thread, "approve")).startswith("Nothing is waiting for approval")
            assert restarts(tmp_path) == ["r1"]  # neither the alias nor the rejected proposal ran
            preview = await say(service, thread, "finalize cause: runner r1 disk full resolution: prune images")
            assert "Cause `runner r1 disk full` (new)" in preview and "Resolution `prune images` (new)" in preview
            assert "Procedure `proc__get_runner_info__knowledge_similar_incidents` (new)" in preview
            assert "Procedure `proc__restart_runner` (new)" in preview and "runner host kernel logs" in preview
            confirm = reply(service, thread, "confirm")
            service.publish(confirm)
            await service.wait_for(lambda: "**Stored**" in service.final_notes()[-1]["body"], "stored")
            notes = len(service.bot_notes())
            service.publish(confirm)  # redelivered
            assert "investigation is stored" in await say(service, thread, "confirm")
            await service.finished()
            assert len(service.bot_notes()) == notes + 1
            metrics = await service_metrics(service)
    assert not model.errors, model.errors
    assert value(metrics, "hummingbird_investigate_approvals_total", outcome="approved") == 1
    assert value(metrics, "hummingbird_investigate_approvals_total", outcome="rejected") == 1
    assert value(metrics, "hummingbird_investigate_refusals_total") == 1
    assert value(metrics, "hummingbird_investigate_procedures_stored_total") == 2
    assert value(metrics, "hummingbird_investigate_turns_total", kind="auto_run") == 1
    await next_exploration(service)


async def test_approvals_name_the_proposal_and_need_another_approver(tmp_path: Path, gitlab_server: GitLabServer,
                                                                    moto_server: MotoServer) -> None:
    """Two Developers in the thread with `investigate_require_other_approver`: an approval of the proposal
    replaced since runs nothing; who asked for the planner's code, or wrote the corrected code, cannot approve it;
    the other one can."""
    seed_gitlab(gitlab_server)
    gitlab_server.add_member(PROJECT_ID, SECOND, DEVELOPER)
    configured = configure(tmp_path)

    def tweak(config: dict[str, Any]) -> None:
        configured(config)
        config["bamboo"]["investigate_require_other_approver"] = True

    with GeminiServer() as model:
        model.respond_with(planner)
        async with start_service(tmp_path, gitlab_server, model, moto_server, tweak=tweak) as service:
            service.publish(comment(service, f"/hummingbird investigate {QUESTION}"))
            await service.wait_for(lambda: bool(service.final_notes()), "the first turn")
            thread = service.discussions()[-1]["id"]
            read = proposal_id(await say(service, thread, "restart it"))
            asked = await say(service, thread, f"approve {read}", MEMBER)  # the planner's code, at MEMBER's request
            assert asked.startswith("You wrote or asked for this code") and restarts(tmp_path) == []
            corrected = await say(service, thread, f"```python\n{RESTART.replace('r1', 'r2')}\n```", SECOND)
            current = proposal_id(corrected)
            stale = await say(service, thread, f"approve {read}", MEMBER)
            assert stale.startswith("The proposal changed") and f"`{current}`" in stale
            own = await say(service, thread, f"approve {current}", SECOND)
            assert own.startswith("You wrote or asked for this code") and restarts(tmp_path) == []
            ran = await say(service, thread, f"approve {current}", MEMBER)
            assert "Approved and ran" in ran and restarts(tmp_path) == ["r2"]
    assert not model.errors, model.errors


async def service_metrics(service: Service) -> Samples:
    return parse(await scrape(listening_url(service.log_path.read_text())))


async def next_exploration(service: Service) -> None:
    """The stored session as the next exploration sees it: one incident; the read-only two-tool procedure
    offered as a tool; for a similar prompt the tool the human approved ranks above an accumulated example's."""
    stores = build_stores(service.loaded)
    kit = build_investigation(service.loaded, ScriptedModel([]), stores, "investigate")
    async with opened(stores):
        assert (await stores.graph.counts()).incidents == 1
        await kit.explorer.remember("accumulated", f"{QUESTION}\n{QUESTION}", ["env_value"], 1.0, PROJECT)
        async with kit.explorer.session(IncidentInput("", {"project": PROJECT})) as enricher:
            names = [t.name for t in enricher.catalogue()]
            assert "proc__get_runner_info__knowledge_similar_incidents" in names
            assert "proc__restart_runner" not in names
            assert enricher.selector is not None
            ranked = await enricher.selector.rank(f"{QUESTION}\n{QUESTION}", enricher.catalogue())
    assert ranked[0] == "get_runner_info"


# qdrant-client's local mode leaves its lock file open when the lock is held elsewhere (its own leak, collected
# later); that is the unavailability this test provokes, so its ResourceWarning is expected here.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_escalation_and_the_over_budget_error_in_the_thread(tmp_path: Path, gitlab_server: GitLabServer,
                                                                  moto_server: MotoServer) -> None:
    """A context window too small for the catalogue: the planner's decline is asked again with the tools it
    did not see; with the tool-selection vectors unavailable (their folder held by another client) the turn is
    refused with the clear error and no model call."""
    seed_gitlab(gitlab_server)
    tweak = configure(tmp_path)
    planned: list[str] = []

    def declining(system: str, user: str) -> str:
        planned.append(user.split("## Available tools\n", 1)[1])
        if len(planned) == 1:
            return json.dumps({"orchestration_code": "", "capability_gaps": [{"investigation": "runner metrics"}]})
        return json.dumps({"narration": "Nothing more to read about the runners."})

    def small_window(config: dict[str, Any]) -> None:
        tweak(config)
        config["bamboo"]["llm_context_window"] = 1500  # under the prompt and the answer margin: one tool a page

    with GeminiServer() as model:
        model.respond_with(declining)
        async with start_service(tmp_path, gitlab_server, model, moto_server, tweak=small_window) as service:
            service.publish(comment(service, "/hummingbird investigate which runner is broken?"))
            await service.wait_for(lambda: bool(service.final_notes()), "the first turn")
            assert service.final_notes()[0]["body"].startswith("Nothing more to read about the runners.")
            first, second = (set(re.findall(r"^- (\w+)\(", page, re.M)) for page in planned)
            assert first and second and not first & second
            thread = service.discussions()[-1]["id"]
            blocker = build_vector_store(service.loaded, 256, TOOLS_COLLECTION_SUFFIX)
            await blocker.open()
            try:
                refused = await say(service, thread, "and the other runners?")
            finally:
                await blocker.aclose()
            assert refused.startswith(f"**Error:** {OVER_BUDGET}") and len(planned) == 2
    assert not model.errors, model.errors
