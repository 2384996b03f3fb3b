"""The service's commit status: set once per state, never posted again before looking for the first POST."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hummingbird_agent.errors import PermanentError
from hummingbird_agent.gitlab.client import GitLabClient
from hummingbird_agent.gitlab.statuses import set_status
from tests.servers import GitLabServer

SHA = "b" * 40


@pytest.fixture
async def client(gitlab_server: GitLabServer) -> AsyncIterator[GitLabClient]:
    gitlab_server.add_project(1, "group/project")
    c = GitLabClient(gitlab_server.url, gitlab_server.bot_token)
    await c.open()
    yield c
    await c.aclose()


async def _set(client: GitLabClient, state: str) -> bool:
    return await set_status(client, 1, SHA, name="hb/triage", state=state, target_url="https://gl/x#note_1",
                            description="Hummingbird triage: 1 new")


async def test_a_state_is_posted_once_and_a_change_is_posted(client: GitLabClient, gitlab_server: GitLabServer) -> None:
    assert await _set(client, "failed") is True
    assert await _set(client, "failed") is False
    assert await _set(client, "success") is True
    assert [(s["name"], s["status"]) for s in gitlab_server.posted_statuses] == [("hb/triage", "failed"),
                                                                                 ("hb/triage", "success")]


async def test_a_post_whose_answer_was_lost_is_not_repeated(client: GitLabClient, gitlab_server: GitLabServer) -> None:
    gitlab_server.fail_next(1, 502, path=r"/statuses/", method="POST", after=True)
    await _set(client, "failed")
    assert len(gitlab_server.posted_statuses) == 1


async def test_an_unknown_state_is_refused_like_gitlab(client: GitLabClient, gitlab_server: GitLabServer) -> None:
    with pytest.raises(PermanentError, match="state does not have a valid value"):
        await _set(client, "broken")
    assert gitlab_server.posted_statuses == []
