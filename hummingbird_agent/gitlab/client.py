"""The orchestrator's GitLab adapter (bot write token): notes, discussions, member checks, bot identity.

The only place the bot token is used. python-gitlab is synchronous, so every call runs in a worker thread;
its exceptions are mapped to our typed errors here, with the project and MR as context.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import gitlab
import gitlab.exceptions as glexc

from hummingbird_agent.errors import PermanentError, TransientError
from hummingbird_agent.lifecycle import ClientState

T = TypeVar("T")
DEVELOPER_ACCESS = 30


@dataclass(frozen=True, slots=True)
class PostedNote:
    discussion_id: str
    note_id: int


@contextlib.contextmanager
def map_gitlab_errors(context: str) -> Iterator[None]:
    """python-gitlab and transport errors -> TransientError (retry) or PermanentError, with context."""
    try:
        yield
    except glexc.GitlabError as exc:
        code = getattr(exc, "response_code", None) or 0
        kind = TransientError if code == 429 or code >= 500 or code == 0 else PermanentError
        raise kind(f"GitLab {context}: HTTP {code or 'error'}: {_short(exc.error_message)}") from exc
    except (OSError, ConnectionError) as exc:  # requests' errors derive from OSError
        raise TransientError(f"GitLab {context}: {type(exc).__name__}") from exc


def _short(message: Any) -> str:
    return str(message).replace("\n", " ")[:200]


class GitLabClient:
    """Async facade over python-gitlab for the bot's own actions."""

    def __init__(self, url: str, token: str, timeout_s: float = 30.0,
                 on_response: Callable[[str, int], None] | None = None) -> None:
        self._url, self._token, self._timeout_s = url, token, timeout_s
        self._on_response = on_response
        """Called with (HTTP method, status) after every API response (metrics)."""
        self._gl: gitlab.Gitlab | None = None
        self._bot_id: int | None = None
        self.state = ClientState.UNOPENED

    def __repr__(self) -> str:  # never show the token
        return f"GitLabClient({self._url!r}, state={self.state.value})"

    async def open(self) -> None:
        self._gl = gitlab.Gitlab(
            self._url, private_token=self._token, retry_transient_errors=True, timeout=self._timeout_s
        )
        if self._on_response is not None:
            seen = self._on_response
            self._gl.session.hooks["response"].append(
                lambda response, *args, **kwargs: seen(response.request.method or "", response.status_code))
        self.state = ClientState.OPEN

    async def aclose(self) -> None:
        if self._gl is not None:
            self._gl.session.close()
        self.state = ClientState.CLOSED

    async def _call(self, context: str, fn: Callable[[gitlab.Gitlab], T]) -> T:
        if self._gl is None or self.state is not ClientState.OPEN:
            raise PermanentError(f"GitLab {context}: client is {self.state.value}")
        gl = self._gl

        def run() -> T:
            with map_gitlab_errors(context):
                return fn(gl)

        return await asyncio.to_thread(run)

    async def bot_user_id(self) -> int:
        """The token owner's user id (GET /user), fetched once per client."""
        if self._bot_id is None:
            def whoami(gl: gitlab.Gitlab) -> int:
                gl.auth()
                if gl.user is None:
                    raise PermanentError("GitLab GET /user: the token has no user")
                return int(gl.user.id)

            self._bot_id = await self._call("GET /user", whoami)
        return self._bot_id

    async def access_level(self, project_id: int | str, user_id: int) -> int:
        """The user's effective access level on the project (inherited included); 0 for non-members."""
        def level(gl: gitlab.Gitlab) -> int:
            try:
                member = gl.projects.get(project_id, lazy=True).members_all.get(user_id)
            except glexc.GitlabGetError as exc:
                if exc.response_code == 404:
                    return 0
                raise
            return int(member.access_level)

        return await self._call(f"member {user_id} of project {project_id}", level)

    async def discussions(self, project_id: int | str, iid: int) -> list[dict[str, Any]]:
        """Every discussion of the MR as plain dicts (all pages)."""
        def fetch(gl: gitlab.Gitlab) -> list[dict[str, Any]]:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            return [d.asdict() for d in mr.discussions.list(iterator=True)]

        return await self._call(f"discussions of !{iid}", fetch)

    async def discussion(self, project_id: int | str, iid: int, discussion_id: str) -> dict[str, Any]:
        def fetch(gl: gitlab.Gitlab) -> dict[str, Any]:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            return dict(mr.discussions.get(discussion_id).asdict())

        return await self._call(f"discussion {discussion_id} of !{iid}", fetch)

    async def create_thread(self, project_id: int | str, iid: int, body: str, internal: bool) -> PostedNote:
        """A new top-level discussion (thread) on the MR."""
        def create(gl: gitlab.Gitlab) -> PostedNote:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            data: dict[str, Any] = {"body": body}
            if internal:
                data["internal"] = True
            disc = mr.discussions.create(data)
            return PostedNote(str(disc.id), int(disc.attributes["notes"][0]["id"]))

        return await self._call(f"create thread on !{iid}", create)

    async def reply(self, project_id: int | str, iid: int, discussion_id: str, body: str) -> PostedNote:
        def add(gl: gitlab.Gitlab) -> PostedNote:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            disc = mr.discussions.get(discussion_id, lazy=True)
            note = disc.notes.create({"body": body})
            return PostedNote(discussion_id, int(note.id))

        return await self._call(f"reply in {discussion_id} on !{iid}", add)

    async def update_note(self, project_id: int | str, iid: int, discussion_id: str, note_id: int, body: str) -> None:
        def update(gl: gitlab.Gitlab) -> None:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            disc = mr.discussions.get(discussion_id, lazy=True)
            disc.notes.update(note_id, {"body": body})

        await self._call(f"update note {note_id} on !{iid}", update)

    async def resolve_thread(self, project_id: int | str, iid: int, discussion_id: str) -> None:
        def resolve(gl: gitlab.Gitlab) -> None:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            mr.discussions.update(discussion_id, {"resolved": True})

        await self._call(f"resolve {discussion_id} on !{iid}", resolve)
