"""The bot token's issue calls (GitLabClient's part): list a project's issues by label and search, create one, edit
it, comment on it. Mixed into GitLabClient, which owns the calls (retries, error mapping, redaction)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Any, Protocol, TypeVar

import gitlab

from hummingbird_agent import budgets
from hummingbird_agent.gitlab.commits import ONCE

T = TypeVar("T")


class _Client(Protocol):
    _redact: Callable[[str], str]

    async def _call(self, context: str, fn: Callable[[gitlab.Gitlab], T], *, retry: bool = True) -> T: ...


class IssueCalls:
    """Mixed into GitLabClient (a `_Client`)."""

    async def issues(self: _Client, project_id: int, *, labels: str, search: str = "",
                     state: str = "opened") -> list[dict[str, Any]]:
        """The project's issues with these labels (and `search` in title or description), oldest first, at most
        BROKEN_ISSUES_LISTED."""
        def fetch(gl: gitlab.Gitlab) -> list[dict[str, Any]]:
            found = gl.projects.get(project_id, lazy=True).issues.list(
                labels=labels, state=state, order_by="created_at", sort="asc", iterator=True, per_page=100,
                **({"search": search} if search else {}), **ONCE)
            return [i.asdict() for i in islice(found, budgets.BROKEN_ISSUES_LISTED)]

        return await self._call(f"GET /projects/{project_id}/issues", fetch)

    async def create_issue(self: _Client, project_id: int, *, title: str, description: str,
                           labels: str) -> dict[str, Any]:
        """POST an issue once (see runner/broken_issue.py for how a second one is never left open)."""
        def create(gl: gitlab.Gitlab) -> dict[str, Any]:
            made = gl.projects.get(project_id, lazy=True).issues.create(
                {"title": self._redact(title), "description": self._redact(description), "labels": labels}, **ONCE)
            return dict(made.asdict())

        return await self._call(f"POST /projects/{project_id}/issues", create, retry=False)

    async def issue(self: _Client, project_id: int, iid: int) -> dict[str, Any]:
        def fetch(gl: gitlab.Gitlab) -> dict[str, Any]:
            return dict(gl.projects.get(project_id, lazy=True).issues.get(iid, **ONCE).asdict())

        return await self._call(f"GET /projects/{project_id}/issues/{iid}", fetch)

    async def edit_issue(self: _Client, project_id: int, iid: int, **fields: str) -> None:
        """PUT the issue's fields (a description, `state_event: close`): idempotent, retried like a read."""
        def update(gl: gitlab.Gitlab) -> None:
            gl.projects.get(project_id, lazy=True).issues.update(
                iid, {k: self._redact(v) for k, v in fields.items()}, **ONCE)

        await self._call(f"PUT /projects/{project_id}/issues/{iid}", update)

    async def comment_issue(self: _Client, project_id: int, iid: int, body: str) -> None:
        """POST a comment once."""
        def create(gl: gitlab.Gitlab) -> None:
            gl.projects.get(project_id, lazy=True).issues.get(iid, lazy=True).notes.create(
                {"body": self._redact(body)}, **ONCE)

        await self._call(f"POST /projects/{project_id}/issues/{iid}/notes", create, retry=False)
