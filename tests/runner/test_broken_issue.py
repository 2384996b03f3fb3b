"""The issue of a broken target branch through the fake GitLab, with the bot's real client: one issue per break
whatever the number of MRs and replicas, the blocked MRs listed and removed as they go green, closed with the fixing
change when the branch passes again; never for a flaky failure, never with a read-only token."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import cast

import pytest

from hummingbird_agent.data_sources import gitlab as gitlab_source
from hummingbird_agent.data_sources.direct import ReadTools
from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.runner.broken_issue import track_breaks
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.triage.broken_issue import LABEL, IssueMeta, blocked_of, meta_of
from hummingbird_agent.triage.culprit_fix import passing_again
from hummingbird_agent.triage.culprit_model import Change, RunRef
from hummingbird_agent.triage.model import CheckResult, Verdict
from hummingbird_agent.triage.reader import TriageCache, TriageReader
from tests.servers.gitlab import GitLabServer
from tests.triage.conftest import run_triage
from tests.triage.culprit_world import PASSING, authors, blocked_mr, case_history, cases_mr, history
from tests.triage.world import Attempt, CiWorld


@pytest.fixture
def world(gitlab_server: GitLabServer) -> CiWorld:
    found = CiWorld(gitlab_server)
    authors(found)
    return found


async def _client(gl: GitLabServer, token: str | None = None) -> AsyncIterator[GitLabClient]:
    client = GitLabClient(gl.url, token or gl.bot_token)
    await client.open()
    yield client
    await client.aclose()


@pytest.fixture
async def bot(gitlab_server: GitLabServer) -> AsyncIterator[GitLabClient]:
    async for client in _client(gitlab_server):
        yield client


def _fixed(gl: GitLabServer):  # type: ignore[no-untyped-def]
    tools = ReadTools()
    gitlab_source.register(cast(ToolRegistry, tools), gl.url, gl.read_token)

    async def fixed(meta: IssueMeta) -> tuple[RunRef, Change | None] | None:
        return await passing_again(TriageReader(tools, "group/project", TriageCache()), meta)

    return fixed


async def _blocked(world: CiWorld, iid: int, base: str) -> tuple[CheckResult, ...]:
    blocked_mr(world, iid, base, run=iid)
    return (await run_triage(world.gl, iid))[0].checks


async def _track(client: GitLabClient, world: CiWorld, iid: int,
                 checks: Sequence[CheckResult]) -> tuple[CheckResult, ...]:
    return await track_breaks(client, 1, iid, checks, _fixed(world.gl))


def _issues(gl: GitLabServer, state: str = "opened") -> list[dict]:  # type: ignore[type-arg]
    return [i for i in gl.issues.values() if state in ("all", i["state"])]


async def test_one_issue_lists_every_blocked_mr_and_each_note_links_it(world: CiWorld, bot: GitLabClient) -> None:
    merges = history(world, 20, broken_at=12)
    links = set()
    for iid in (1, 2, 3):
        checks = await _track(bot, world, iid, await _blocked(world, iid, merges[-1]))
        assert checks[0].culprit is not None
        links.add(checks[0].culprit.issue_url)
    (issue,) = _issues(world.gl, "all")
    assert links == {issue["web_url"]} and issue["labels"] == [LABEL]
    assert blocked_of(issue["description"]) == [1, 2, 3]
    assert "!111" in issue["title"] and "[first failing run](" in issue["description"]
    assert "AssertionError: parse" in issue["description"]


async def test_two_replicas_at_once_leave_one_open_issue(world: CiWorld, gitlab_server: GitLabServer) -> None:
    merges = history(world, 20, broken_at=12)
    one, two = await _blocked(world, 1, merges[-1]), await _blocked(world, 2, merges[-2])
    first, second = GitLabClient(gitlab_server.url, gitlab_server.bot_token), GitLabClient(
        gitlab_server.url, gitlab_server.bot_token)
    await first.open()
    await second.open()
    await asyncio.gather(_track(first, world, 1, one), _track(second, world, 2, two))
    await first.aclose()
    await second.aclose()
    (issue,) = _issues(world.gl)
    assert sorted(blocked_of(issue["description"])) == [1, 2]
    assert all(i["state"] == "closed" for i in _issues(world.gl, "all") if i is not issue)


@pytest.mark.parametrize("order", [(2, 1), (1, 2)], ids=["later-break-first", "earlier-break-first"])
async def test_mrs_failing_different_cases_of_one_job_share_the_issue_of_its_break(
        world: CiWorld, bot: GitLabClient, order: tuple[int, int]) -> None:
    """`unit-tests` broke by test_a at the 5th merge (!104) and by test_b at the 11th (!110). !1 fails both, !2 only
    test_b, so their searches name different breaks: one issue tracks the job's break, whichever MR comes first. It
    lists both MRs and both breaks; its title and marker give the earliest."""
    merges = case_history(world, 16, {"test_a": 5, "test_b": 11})
    fails = {1: ["test_a", "test_b"], 2: ["test_b"]}
    links = set()
    for iid in order:
        cases_mr(world, iid, merges[-1], fails[iid], run=90 + iid)
        (check,) = await _track(bot, world, iid, (await run_triage(world.gl, iid))[0].checks)
        assert check.culprit is not None and check.culprit.named is not None
        assert check.culprit.named.mr_iid == {1: 104, 2: 110}[iid]
        links.add(check.culprit.issue_url)
    (issue,) = _issues(world.gl, "all")
    description = issue["description"]
    assert links == {issue["web_url"]} and sorted(blocked_of(description)) == [1, 2]
    assert "since !104" in issue["title"]
    assert "[!104](" in description and "first by test `tests.test_core.test_a`" in description
    assert "[!110](" in description and "first by test `tests.test_core.test_b`" in description
    fifth = next(pid for (_, pid), p in world.gl.pipelines.items() if p["sha"] == merges[4])
    meta = meta_of(description)
    assert meta is not None and meta.since == fifth and meta.job == "unit-tests"


async def test_a_green_mr_leaves_the_list_and_a_passing_branch_closes_the_issue(world: CiWorld,
                                                                                 bot: GitLabClient) -> None:
    merges = history(world, 20, broken_at=12)
    for iid in (1, 2):
        await _track(bot, world, iid, await _blocked(world, iid, merges[-1]))
    await _track(bot, world, 1, ())  # !1's pipeline passed
    (issue,) = _issues(world.gl)
    assert blocked_of(issue["description"]) == [2]
    world.merged(300, ["f" * 40], author_id=52)
    world.pipeline(world.gl.merge_requests[(1, 300)]["merge_commit_sha"],
                   [Attempt("unit-tests", "success", trace=PASSING)])
    await _track(bot, world, 2, ())
    (closed,) = _issues(world.gl, "all")
    assert closed["state"] == "closed"
    (comment,) = world.gl.issue_notes[(1, closed["iid"])]
    assert "passes on `main` again" in comment["body"] and "[!300](" in comment["body"] and "@carol" in comment["body"]


async def test_a_flaky_failure_opens_no_issue(world: CiWorld, bot: GitLabClient) -> None:
    history(world, 6, broken_at=99)
    flaky = CheckResult("unit-tests", Verdict.FLAKY, "failed, then passed on a retry")
    assert await _track(bot, world, 1, (flaky,)) == (flaky,)
    assert _issues(world.gl, "all") == []


async def test_a_read_only_token_writes_no_issue(world: CiWorld, gitlab_server: GitLabServer) -> None:
    merges = history(world, 12, broken_at=6)
    checks = await _blocked(world, 1, merges[-1])
    async for reader in _client(gitlab_server, gitlab_server.read_token):
        assert await _track(reader, world, 1, checks) == checks
    assert _issues(world.gl, "all") == []


async def test_an_issue_the_bot_did_not_write_is_never_taken_for_its_own(world: CiWorld, bot: GitLabClient) -> None:
    merges = history(world, 12, broken_at=6)
    checks = await _blocked(world, 1, merges[-1])
    assert checks[0].culprit is not None
    key = checks[0].culprit.key
    forged = world.gl.add_issue(1, "main is broken", labels=[LABEL], author_id=50, description=(
        f'<!-- hummingbird-broken {{"key":"{key}","branch":"main","job":"unit-tests","since":1}} -->\n- !99'))
    await _track(bot, world, 1, checks)
    assert forged["description"].endswith("- !99") and forged["state"] == "opened"
    assert len(_issues(world.gl)) == 2


async def test_another_projects_issue_of_the_same_failure_is_never_touched(world: CiWorld, bot: GitLabClient) -> None:
    merges = history(world, 12, broken_at=6)
    checks = await _blocked(world, 1, merges[-1])
    assert checks[0].culprit is not None
    world.gl.add_project(2, "group/other")
    key = checks[0].culprit.key
    theirs = world.gl.add_issue(2, "main is broken", labels=[LABEL], author_id=world.gl.bot_user["id"], description=(
        f'<!-- hummingbird-broken {{"key":"{key}","branch":"main","job":"unit-tests","since":1}} -->\n'
        "#### Merge requests blocked by it\n\n<!-- hummingbird-blocked -->\n- !5\n<!-- hummingbird-blocked-end -->"))
    before = dict(theirs)
    (linked,) = await _track(bot, world, 1, checks)
    assert theirs == before
    (mine,) = [i for (p, _), i in world.gl.issues.items() if p == 1]
    assert linked.culprit is not None and linked.culprit.issue_url == mine["web_url"] and "/group/project/" in (
        mine["web_url"])
