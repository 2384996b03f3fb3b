"""The bot's GitLab adapter against the fake GitLab server, through the real python-gitlab client."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.errors import PermanentError, TransientError
from hummingbird_agent.gitlab.client import GitLabClient
from tests.servers import GitLabServer

DEVELOPER, REPORTER = 30, 20


@pytest.fixture
async def client(gitlab_server: GitLabServer) -> AsyncIterator[GitLabClient]:
    gitlab_server.add_project(1, "group/project")
    gitlab_server.add_mr(1, 7)
    c = GitLabClient(gitlab_server.url, gitlab_server.bot_token)
    await c.open()
    yield c
    await c.aclose()


async def test_bot_identity_and_member_levels(client: GitLabClient, gitlab_server: GitLabServer) -> None:
    gitlab_server.add_member(1, 42, DEVELOPER)
    gitlab_server.add_member(1, 43, REPORTER)
    assert await client.bot_user_id() == gitlab_server.bot_user["id"]
    assert await client.access_level(1, 42) == DEVELOPER
    assert await client.access_level(1, 43) == REPORTER
    assert await client.access_level(1, 99) == 0
    assert "bot-token" not in repr(client)


async def test_thread_reply_update_resolve(client: GitLabClient, gitlab_server: GitLabServer) -> None:
    posted = await client.create_thread(1, 7, "placeholder", internal=True)
    await client.update_note(1, 7, posted.discussion_id, posted.note_id, "final")
    reply = await client.reply(1, 7, posted.discussion_id, "follow-up")
    await client.resolve_thread(1, 7, posted.discussion_id)
    [discussion] = await client.discussions(1, 7)
    bodies = [n["body"] for n in discussion["notes"]]
    assert bodies == ["final", "follow-up"]
    assert discussion["notes"][0]["internal"] is True
    assert discussion["notes"][1]["id"] == reply.note_id
    assert discussion["notes"][0]["resolved"] is True
    assert discussion["notes"][0]["author"]["id"] == gitlab_server.bot_user["id"]


async def test_all_discussion_pages_are_read(client: GitLabClient, gitlab_server: GitLabServer) -> None:
    for i in range(45):
        gitlab_server.add_discussion(1, 7, f"comment {i}")
    found = await client.discussions(1, 7)
    assert [d["notes"][0]["body"] for d in found] == [f"comment {i}" for i in range(45)]


async def test_missing_mr_is_a_permanent_error_without_token(client: GitLabClient) -> None:
    with pytest.raises(PermanentError) as info:
        await client.discussions(1, 999)
    assert "404" in str(info.value) and "bot-token" not in str(info.value)


async def test_reads_are_retried_with_a_warning_per_failed_attempt(
    client: GitLabClient, gitlab_server: GitLabServer, caplog: pytest.LogCaptureFixture
) -> None:
    gitlab_server.add_discussion(1, 7, "hello")
    gitlab_server.fail_next(2, 502, path=r"/discussions$", method="GET")
    with caplog.at_level(logging.WARNING, logger="hummingbird_agent.gitlab.client"):
        [discussion] = await client.discussions(1, 7)
    assert discussion["notes"][0]["body"] == "hello"
    messages = [r.getMessage() for r in caplog.records]
    assert [m.split(":")[0] for m in messages] == ["GitLab call failed (attempt 1 of 3)",
                                                   "GitLab call failed (attempt 2 of 3)"]
    assert all("GET /projects/1/merge_requests/7/discussions" in m and "HTTP 502" in m for m in messages)
    assert not any("bot-token" in m for m in messages)


async def test_an_outage_ends_a_read_after_the_attempt_budget(
    client: GitLabClient, gitlab_server: GitLabServer
) -> None:
    gitlab_server.fail_next(100, 500)
    with pytest.raises(TransientError, match="HTTP 500"):
        await client.discussions(1, 7)
    assert len(gitlab_server.requests_to(r"/discussions$", "GET")) == budgets.GITLAB_ATTEMPTS


async def test_a_note_post_is_never_repeated_blindly(client: GitLabClient, gitlab_server: GitLabServer) -> None:
    gitlab_server.fail_next(1, 504, path=r"/discussions$", method="POST", after=True)
    posted = await client.post_note_once(1, 7, "mine", discussion_id=None, internal=False,
                                         is_mine=lambda body: body == "mine")
    [discussion] = await client.discussions(1, 7)
    assert [n["body"] for n in discussion["notes"]] == ["mine"] and posted.note_id == discussion["notes"][0]["id"]
    assert len(gitlab_server.requests_to(r"/discussions$", "POST")) == 1


async def test_a_refused_permanent_write_is_not_retried(client: GitLabClient, gitlab_server: GitLabServer) -> None:
    gitlab_server.fail_next(1, 403, path=r"/discussions$", method="POST")
    with pytest.raises(PermanentError, match="403"):
        await client.post_note_once(1, 7, "mine", discussion_id=None, internal=False, is_mine=lambda body: True)
    assert len(gitlab_server.requests_to(r"/discussions$", "POST")) == 1


async def test_reads_for_learning_statuses_and_compare(client: GitLabClient, gitlab_server: GitLabServer) -> None:
    for n in range(130):  # more than one page
        gitlab_server.add_commit_status(1, "a" * 40, f"job-{n}", "success")
    gitlab_server.add_compare(1, "a" * 40, "b" * 40, {"ci.yml": "@@ -1 +1 @@\n-a\n+b\n"}, ["Fix CI", "Tidy"])
    statuses = await client.commit_statuses(1, "a" * 40)
    assert len(statuses) == 130 and statuses[0]["name"] == "job-0"
    compare = await client.compare(1, "a" * 40, "b" * 40)
    assert [d["new_path"] for d in compare["diffs"]] == ["ci.yml"]
    assert [c["title"] for c in compare["commits"]] == ["Fix CI", "Tidy"] and compare["commit"]["id"] == "b" * 40
    with pytest.raises(PermanentError, match="compare .*HTTP 404"):
        await client.compare(1, "a" * 40, "c" * 40)


@pytest.mark.parametrize("after", [True, False], ids=["committed-then-hangs", "hangs-then-commits"])
async def test_an_unanswered_note_post_is_looked_for_until_gitlab_cannot_commit_it(
    gitlab_server: GitLabServer, after: bool
) -> None:
    # The POST outlives the client's read timeout; GitLab commits it before the answer hangs, or only later,
    # after the client gave up and after a first look for the note would have found nothing.
    gitlab_server.add_project(1, "group/project")
    gitlab_server.add_mr(1, 7)
    gitlab_server.hang_next(hang_s=5.0, path=r"/discussions$", method="POST", after=after)
    client = GitLabClient(gitlab_server.url, gitlab_server.bot_token, timeout_s=1.0, settle_s=60.0)
    await client.open()
    try:
        posted = await client.post_note_once(1, 7, "mine", discussion_id=None, internal=False,
                                             is_mine=lambda body: body == "mine")
    finally:
        await client.aclose()
    while gitlab_server.in_progress:  # every request GitLab is still carrying out has landed
        await asyncio.sleep(0.05)
    notes = gitlab_server.all_notes(1, 7)
    assert [n["body"] for n in notes] == ["mine"] and posted.note_id == notes[0]["id"]
    assert len(gitlab_server.requests_to(r"/discussions$", "POST")) == 1


async def test_an_unanswered_note_post_that_left_nothing_is_posted_again_after_the_window(
    gitlab_server: GitLabServer,
) -> None:
    # A gateway timeout before GitLab wrote anything: the note never appears, so once a search that started
    # after the window finds nothing, the POST is repeated (and the MR gets its one note).
    gitlab_server.add_project(1, "group/project")
    gitlab_server.add_mr(1, 7)
    gitlab_server.fail_next(1, 504, path=r"/discussions$", method="POST")
    client = GitLabClient(gitlab_server.url, gitlab_server.bot_token, settle_s=2.0)
    await client.open()
    try:
        await client.post_note_once(1, 7, "mine", discussion_id=None, internal=False,
                                    is_mine=lambda body: body == "mine")
    finally:
        await client.aclose()
    assert [n["body"] for n in gitlab_server.all_notes(1, 7)] == ["mine"]
    calls = [(r.method, r.path.endswith("/discussions")) for r in gitlab_server.requests if "/discussions" in r.path]
    assert calls[0] == ("POST", True) and calls[-1] == ("POST", True) and ("GET", True) in calls[1:-1]


async def test_a_compare_answered_with_a_web_page_is_a_permanent_error(client: GitLabClient,
                                                                      gitlab_server: GitLabServer) -> None:
    """A proxy in front of GitLab (a sign-in page) can answer 200 with HTML: python-gitlab then returns the raw
    response, not the compare, and the learning run states the fix as a gap instead of failing."""
    gitlab_server.add_compare(1, "a" * 40, "b" * 40, {"ci.yml": "@@ -1 +1 @@\n-a\n+b\n"}, ["Fix CI"])
    gitlab_server.fail_next(status=200, path=r"/repository/compare", body=b"<html>Sign in</html>",
                            headers={"Content-Type": "text/html; charset=utf-8"})
    with pytest.raises(PermanentError, match="compare .*: answered text/html; charset=utf-8, not JSON"):
        await client.compare(1, "a" * 40, "b" * 40)
