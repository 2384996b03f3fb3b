"""GitLab commits of a branch's history (read token): the commits between two commits, and the merge requests that
brought a commit in, with their authors: what names the change that broke a target branch; and the versions of a
merge request (each push's head and its merge base): what an older head of the MR was built on."""

from __future__ import annotations

from itertools import islice
from typing import Any

import gitlab

from hummingbird_agent import budgets
from hummingbird_agent.data_sources.gitlab_api import call, project_of
from hummingbird_agent.tools.base import ToolDef, ToolResult

_COMMIT_KEYS = ("id", "short_id", "title", "author_name", "created_at", "parent_ids", "web_url")
_MR_KEYS = ("iid", "state", "target_branch", "merged_at", "merge_commit_sha", "squash_commit_sha", "sha", "web_url")
_VERSION_KEYS = ("id", "head_commit_sha", "base_commit_sha", "start_commit_sha", "created_at")
_SHA = {"type": "string", "pattern": "^[0-9a-f]{7,64}$"}
_PROJECT = {"type": "string", "minLength": 1, "maxLength": 255,
            "description": "Project path (group/name) or numeric id."}


def compare_commits(gl: gitlab.Gitlab, project: str, from_sha: str, to_sha: str,
                    max_commits: int = budgets.CULPRIT_MAX_RANGE_COMMITS) -> ToolResult:
    """The commits reachable from `to_sha` and not from `from_sha`, oldest first (GitLab's compare; its diffs are
    not kept); more than `max_commits` come back `truncated`, the newest kept."""
    def fetch() -> ToolResult:
        found = project_of(gl, project).repository_compare(from_sha, to_sha)
        listed = found.get("commits") if isinstance(found, dict) else None
        if not isinstance(listed, list):
            return ToolResult.error("gitlab_error", f"compare of {from_sha[:12]}...{to_sha[:12]}: no commit list")
        commits = [{k: c.get(k) for k in _COMMIT_KEYS} for c in listed if isinstance(c, dict)]
        kept = commits[-max_commits:]
        return ToolResult(True, kept, truncated=len(commits) > len(kept), metadata={"total": len(commits)})

    return call(f"commits {from_sha[:12]}...{to_sha[:12]} of {project}", fetch)


def commit_merge_requests(gl: gitlab.Gitlab, project: str, sha: str) -> list[dict[str, Any]] | ToolResult:
    """The project's merge requests that contain the commit (its diff's commits, its merge or squash commit), newest
    first: iid, state, target branch, when merged, the author's username (titles are not kept: free text of whoever
    opened the MR)."""
    def fetch() -> list[dict[str, Any]]:
        path = f"/projects/{project_of(gl, project).encoded_id}/repository/commits/{sha}/merge_requests"
        listed = gl.http_list(path, iterator=True, per_page=budgets.CULPRIT_MRS_PER_COMMIT)
        return [{k: m.get(k) for k in _MR_KEYS} | {"author": (m.get("author") or {}).get("username")}
                for m in islice(listed, budgets.CULPRIT_MRS_PER_COMMIT) if isinstance(m, dict)]

    return call(f"merge requests of {sha[:12]} in {project}", fetch)


def mr_versions(gl: gitlab.Gitlab, project: str, mr_iid: int,
                max_versions: int = budgets.TRIAGE_MR_VERSIONS) -> ToolResult:
    """The MR's diff versions, newest first (one per push, GitLab's `GET .../versions`): the head each showed and its
    merge base; more than `max_versions` come back `truncated` (the oldest left out) with GitLab's total."""
    def fetch() -> ToolResult:
        listed = project_of(gl, project).mergerequests.get(mr_iid, lazy=True).diffs.list(iterator=True, per_page=100)
        out = [{k: v.asdict().get(k) for k in _VERSION_KEYS} for v in islice(listed, max_versions + 1)]
        total = listed.total if isinstance(listed.total, int) else None
        return ToolResult(True, out[:max_versions], truncated=len(out) > max_versions, metadata={"total": total})

    return call(f"versions of !{mr_iid} in {project}", fetch)


TOOL_DEFS = (
    ToolDef("gitlab_compare_commits", "The commits between two commits (reachable from to_sha, not from from_sha), "
            "oldest first: id, title, author_name, created_at, parent_ids. A range longer than max_commits keeps "
            "its newest and is marked truncated.",
            {"type": "object", "additionalProperties": False, "required": ["project", "from_sha", "to_sha"],
             "properties": {"project": _PROJECT, "from_sha": _SHA, "to_sha": _SHA,
                            "max_commits": {"type": "integer", "minimum": 1,
                                            "maximum": budgets.CULPRIT_MAX_RANGE_COMMITS}}},
            compare_commits),
    ToolDef("gitlab_get_commit_merge_requests", "The merge requests that contain a commit (its own commits, its merge "
            "or squash commit), newest first: iid, state, target_branch, merged_at, author (username), web_url.",
            {"type": "object", "additionalProperties": False, "required": ["project", "sha"],
             "properties": {"project": _PROJECT, "sha": _SHA}},
            commit_merge_requests),
    ToolDef("gitlab_list_mr_versions", "The versions of a merge request, newest first (one per push to its branch): "
            "id, head_commit_sha (the MR's head then), base_commit_sha (its merge base with the target branch), "
            "start_commit_sha, created_at. A list longer than max_versions keeps the newest and is marked truncated.",
            {"type": "object", "additionalProperties": False, "required": ["project", "mr_iid"],
             "properties": {"project": _PROJECT, "mr_iid": {"type": "integer", "minimum": 1},
                            "max_versions": {"type": "integer", "minimum": 1,
                                             "maximum": budgets.TRIAGE_MR_VERSIONS}}},
            mr_versions),
)
