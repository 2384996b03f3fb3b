"""The bot token's reads and writes of commits (GitLabClient's part): statuses, the commit status it posts, and
the compare of two commits that learning from a fix reads. Mixed into GitLabClient, which owns the calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

import gitlab

from hummingbird_agent.errors import PermanentError
from hummingbird_agent.gitlab.error_map import short

T = TypeVar("T")
# Per-request options: 429s and 5xx come back to us instead of being slept on inside the thread.
ONCE: dict[str, Any] = {"obey_rate_limit": False, "retry_transient_errors": False}
_ONCE = ONCE


class _Client(Protocol):
    """What these calls need of the client they are mixed into: its calls (retries, error mapping) and redaction."""

    _redact: Callable[[str], str]

    async def _call(self, context: str, fn: Callable[[gitlab.Gitlab], T], *, retry: bool = True) -> T: ...


class CommitCalls:
    """Mixed into GitLabClient (a `_Client`)."""

    async def commit_statuses(self: _Client, project_id: int | str, sha: str) -> list[dict[str, Any]]:
        """Every CI status of a commit (GitLab jobs and external statuses), all pages."""
        def fetch(gl: gitlab.Gitlab) -> list[dict[str, Any]]:
            commit = gl.projects.get(project_id, lazy=True).commits.get(sha, lazy=True)
            return [s.asdict() for s in commit.statuses.list(iterator=True, all=True, per_page=100, **_ONCE)]

        return await self._call(f"GET /projects/{project_id}/repository/commits/{sha[:12]}/statuses", fetch)

    async def open_merge_requests_of(self: _Client, project_id: int | str, sha: str) -> list[dict[str, Any]]:
        """The project's open MRs that contain the commit (its head or any of their commits), all pages."""
        def fetch(gl: gitlab.Gitlab) -> list[dict[str, Any]]:
            commit = gl.projects.get(project_id, lazy=True).commits.get(sha, lazy=True)
            found = commit.merge_requests(state="opened", get_all=True, per_page=100, **_ONCE)
            return [dict(m) for m in found if isinstance(m, dict)]

        return await self._call(f"GET /projects/{project_id}/repository/commits/{sha[:12]}/merge_requests", fetch)

    async def post_commit_status(self: _Client, project_id: int | str, sha: str, fields: Mapping[str, str]) -> None:
        """POST /statuses/:sha once (it creates a status; see gitlab/statuses.py for the repeat rule)."""
        def post(gl: gitlab.Gitlab) -> None:
            gl.projects.get(project_id, lazy=True).commits.get(sha, lazy=True).statuses.create(
                {k: self._redact(v) for k, v in fields.items()}, **_ONCE)

        await self._call(f"POST /projects/{project_id}/statuses/{sha[:12]}", post, retry=False)

    async def compare(self: _Client, project_id: int | str, from_sha: str, to_sha: str) -> dict[str, Any]:
        """GET /repository/compare: the commits and file diffs from `from_sha` to `to_sha`."""
        context = f"GET /projects/{project_id}/repository/compare {from_sha[:12]}...{to_sha[:12]}"

        def fetch(gl: gitlab.Gitlab) -> dict[str, Any]:
            found = gl.projects.get(project_id, lazy=True).repository_compare(from_sha, to_sha, **_ONCE)
            if isinstance(found, dict):
                return found
            # python-gitlab hands back the raw response when it is not JSON (a proxy's sign-in page).
            kind = found.headers.get("Content-Type") or "no content type"
            raise PermanentError(f"GitLab {context}: answered {short(kind)}, not JSON")

        return await self._call(context, fetch)
