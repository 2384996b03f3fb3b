"""Issues and a commit's merge requests in the fake GitLab, through the unmodified python-gitlab: created, listed with
GitLab's filters, edited, closed, reopened and commented on; a read-only token is refused every write with GitLab's
403; the MRs that contain a commit as GitLab renders them."""

from __future__ import annotations

from typing import Any

import gitlab
import pytest

from tests.servers import GitLabServer
from tests.triage.world import CiWorld, sha_of


def _project(gl: GitLabServer, token: str | None = None) -> Any:
    return gitlab.Gitlab(gl.url, private_token=token or gl.bot_token).projects.get(1, lazy=True)


def test_an_issue_is_created_listed_and_found_by_labels_state_and_search(gitlab_server: GitLabServer) -> None:
    CiWorld(gitlab_server)
    project = _project(gitlab_server)
    broken = project.issues.create({"title": "main is broken: unit", "description": "First failing on abc123",
                                    "labels": ["ci-broken", "triage"]})
    assert (broken.iid, broken.state, broken.labels) == (1, "opened", ["ci-broken", "triage"])
    assert broken.author["id"] == gitlab_server.bot_user["id"] and broken.web_url.endswith("/-/issues/1")
    other = project.issues.create({"title": "Docs typo", "labels": "docs"})
    assert [i.iid for i in project.issues.list()] == [other.iid, broken.iid]  # newest first
    assert [i.iid for i in project.issues.list(labels=["ci-broken"])] == [1]
    assert [i.iid for i in project.issues.list(labels=["ci-broken", "docs"])] == []  # every label must be on it
    assert [i.iid for i in project.issues.list(search="ABC123 failing")] == [1]  # words in any order and case
    assert [i.iid for i in project.issues.list(search="broken unit")] == [1]
    assert [i.iid for i in project.issues.list(labels="None")] == []
    client = gitlab.Gitlab(gitlab_server.url, private_token=gitlab_server.bot_token)
    with pytest.raises(gitlab.GitlabHttpError) as caught:  # python-gitlab checks the title first; GitLab too
        client.http_post("/projects/1/issues", post_data={"description": "no title"})
    assert caught.value.response_code == 400 and caught.value.error_message == "title is missing"


def test_an_issue_is_edited_closed_reopened_and_commented(gitlab_server: GitLabServer) -> None:
    CiWorld(gitlab_server)
    project = _project(gitlab_server)
    issue = project.issues.create({"title": "main is broken"})
    issue.description = "Still failing on def456"
    issue.state_event = "close"
    issue.save()
    fresh = project.issues.get(issue.iid)
    closed_by = fresh.attributes["closed_by"]  # `closed_by` is also a method of python-gitlab's issue
    assert (fresh.state, fresh.description, closed_by["id"]) == ("closed", "Still failing on def456",
                                                                 gitlab_server.bot_user["id"])
    assert [i.iid for i in project.issues.list(state="opened")] == []
    fresh.state_event = "reopen"
    fresh.save()
    assert project.issues.get(issue.iid).state == "opened" and project.issues.get(issue.iid).closed_at is None
    note = fresh.notes.create({"body": "Fixed by !7"})
    assert (note.noteable_type, note.body) == ("Issue", "Fixed by !7")
    assert [n.body for n in fresh.notes.list()] == ["Fixed by !7"]
    with pytest.raises(gitlab.GitlabGetError) as caught:
        project.issues.get(99)
    assert caught.value.error_message == "404 Not found"


def test_a_read_only_token_is_refused_every_issue_write(gitlab_server: GitLabServer) -> None:
    CiWorld(gitlab_server)
    _project(gitlab_server).issues.create({"title": "seen"})
    reader = _project(gitlab_server, gitlab_server.read_token)
    assert [i.title for i in reader.issues.list()] == ["seen"]  # reading is allowed
    issue = reader.issues.get(1)
    writes = (lambda: reader.issues.create({"title": "nope"}), lambda: issue.notes.create({"body": "nope"}),
              lambda: reader.issues.update(1, {"state_event": "close"}))
    for write in writes:
        with pytest.raises(gitlab.GitlabError) as caught:
            write()
        assert caught.value.response_code == 403 and "insufficient_scope" in caught.value.response_body.decode()
    assert gitlab_server.issues[(1, 1)]["state"] == "opened" and len(gitlab_server.issues) == 1


def test_the_merge_requests_of_a_commit(gitlab_server: GitLabServer) -> None:
    world = CiWorld(gitlab_server)
    first, second = sha_of("c1"), sha_of("c2")
    merged = world.merged(7, [first, second], title="Speed up the parser")
    world.mr(8, base_sha=sha_of("base"), sha=sha_of("open-head"))
    project = gitlab.Gitlab(gitlab_server.url, private_token=gitlab_server.read_token).projects.get(1, lazy=True)
    (found,) = project.commits.get(first, lazy=True).merge_requests()
    assert (found["iid"], found["title"], found["state"]) == (7, "Speed up the parser", "merged")
    assert found["merge_commit_sha"] == merged["merge_commit_sha"] and found["merged_at"]
    assert found["author"]["id"] == 2 and found["web_url"].endswith("/-/merge_requests/7")
    assert "diff_refs" not in found and "head_pipeline" not in found  # MergeRequestBasic
    assert [m["iid"] for m in project.commits.get(merged["merge_commit_sha"], lazy=True).merge_requests()] == [7]
    assert project.commits.get(sha_of("open-head"), lazy=True).merge_requests(state="merged") == []
    with pytest.raises(gitlab.GitlabGetError) as caught:
        project.commits.get(sha_of("unknown"), lazy=True).merge_requests()
    assert caught.value.response_code == 404 and caught.value.error_message == "404 Commit Not Found"
