"""The orchestrator's GitLab adapter (bot write token): notes, discussions, member checks, bot identity; and
`run`'s check that the MR can be read, with whichever token that run reads GitLab with.

The only place the bot token is used. python-gitlab is synchronous, so every call runs in a worker thread;
its exceptions are mapped to our typed errors here, with the method and path as context.

Retries (python-gitlab's own retry loop is off: it sleeps inside the thread, where shutdown cannot stop it,
and it re-sends POSTs blindly):
- reads (GET) and idempotent writes (PUT: update a note, resolve a thread) are retried here on 429/5xx,
  timeouts and connection errors, with cancellable backoff, GITLAB_ATTEMPTS times at most;
- creating a note (POST) goes out once; after such a failure, `post_note_once` looks for the bot's own note
  (the caller says how to recognise it) before it posts again, since GitLab may have stored the first one.
  A POST that got no answer (a timeout, a gateway's 504) may still be running in GitLab and commit later,
  so its note is looked for until GitLab can no longer commit it (`settle_s` after it was sent).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import gitlab
import gitlab.exceptions as glexc

from hummingbird_agent import budgets
from hummingbird_agent.errors import OutcomeUnknown, PermanentError, TransientError
from hummingbird_agent.gitlab.commits import ONCE as _ONCE
from hummingbird_agent.gitlab.commits import CommitCalls
from hummingbird_agent.gitlab.error_map import map_gitlab_errors
from hummingbird_agent.gitlab.issues import IssueCalls
from hummingbird_agent.gitlab.quiet import no_commands
from hummingbird_agent.lifecycle import ClientState

T = TypeVar("T")
DEVELOPER_ACCESS = 30
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PostedNote:
    discussion_id: str
    note_id: int


@dataclass(frozen=True, slots=True)
class MrHead:
    """What `run` reads of an MR before it runs: the project's numeric id and the head commit."""

    project_id: int
    sha: str | None


def _mr_path(project_id: int | str, iid: int) -> str:
    return f"/projects/{project_id}/merge_requests/{iid}"


class GitLabClient(CommitCalls, IssueCalls):
    """Async facade over python-gitlab for the bot's own actions."""

    def __init__(self, url: str, token: str, timeout_s: float = budgets.GITLAB_REQUEST_TIMEOUT_S,
                 on_response: Callable[[str, int], None] | None = None,
                 settle_s: float = budgets.GITLAB_WRITE_SETTLE_S, redact: Callable[[str], str] = str) -> None:
        self._url, self._token, self._timeout_s, self._settle_s = url, token, timeout_s, settle_s
        self._redact: Callable[[str], str] = lambda text: no_commands(redact(text))
        """Applied to every text written: whatever composed it, no secret reaches GitLab and no line of it runs
        as a quick action of the bot's."""
        self._on_response = on_response
        """Called with (HTTP method, status) after every API response (metrics)."""
        self._gl: gitlab.Gitlab | None = None
        self._bot_id: int | None = None
        self.state = ClientState.UNOPENED

    def __repr__(self) -> str:  # never show the token
        return f"GitLabClient({self._url!r}, state={self.state.value})"

    async def open(self) -> None:
        self._gl = gitlab.Gitlab(self._url, private_token=self._token, retry_transient_errors=False,
                                 timeout=self._timeout_s)
        if self._on_response is not None:
            seen = self._on_response
            self._gl.session.hooks["response"].append(
                lambda response, *args, **kwargs: seen(response.request.method or "", response.status_code))
        self.state = ClientState.OPEN

    async def aclose(self) -> None:
        if self._gl is not None:
            self._gl.session.close()
        self.state = ClientState.CLOSED

    async def _call(self, context: str, fn: Callable[[gitlab.Gitlab], T], *, retry: bool = True) -> T:
        """Run `fn` in a thread; retry transient failures unless `retry` is off (a POST that creates)."""
        if self._gl is None or self.state is not ClientState.OPEN:
            raise PermanentError(f"GitLab {context}: client is {self.state.value}")
        gl = self._gl

        def run() -> T:
            with map_gitlab_errors(context):
                return fn(gl)

        attempts = budgets.GITLAB_ATTEMPTS if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                return await asyncio.to_thread(run)
            except TransientError as exc:
                log.warning("GitLab call failed (attempt %d of %d): %s", attempt, attempts, exc)
                if attempt == attempts:
                    raise
                await asyncio.sleep(min(budgets.GITLAB_RETRY_BASE_S * 2 ** (attempt - 1),
                                        budgets.GITLAB_RETRY_MAX_DELAY_S))
        raise AssertionError("unreachable")

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
                member = gl.projects.get(project_id, lazy=True).members_all.get(user_id, **_ONCE)
            except glexc.GitlabGetError as exc:
                if exc.response_code == 404:
                    return 0
                raise
            return int(member.access_level)

        return await self._call(f"GET /projects/{project_id}/members/all/{user_id}", level)

    async def read_mr(self, project_id: int | str, iid: int) -> MrHead | tuple[str, int]:
        """The MR's head when this token can read it; else what it cannot read ("project" or "merge request")
        and the HTTP status (401, 403 or 404). Other failures raise as any read does."""
        def probe(gl: gitlab.Gitlab) -> MrHead | tuple[str, int]:
            project = gl.projects.get(project_id, lazy=True)
            reads = (("project", lambda: gl.projects.get(project_id, **_ONCE)),
                     ("merge request", lambda: project.mergerequests.get(iid, **_ONCE)))
            found: Any = None
            for what, read in reads:
                try:
                    found = read()
                except (glexc.GitlabGetError, glexc.GitlabAuthenticationError) as exc:  # 401 is the latter
                    if exc.response_code in (401, 403, 404):
                        return what, int(exc.response_code)
                    raise
            return MrHead(int(found.project_id), str(getattr(found, "sha", None) or "") or None)

        return await self._call(f"GET {_mr_path(project_id, iid)}", probe)

    async def discussions(self, project_id: int | str, iid: int) -> list[dict[str, Any]]:
        """Every discussion of the MR as plain dicts (all pages)."""
        def fetch(gl: gitlab.Gitlab) -> list[dict[str, Any]]:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            return [d.asdict() for d in mr.discussions.list(iterator=True, **_ONCE)]

        return await self._call(f"GET {_mr_path(project_id, iid)}/discussions", fetch)

    async def discussion(self, project_id: int | str, iid: int, discussion_id: str) -> dict[str, Any]:
        def fetch(gl: gitlab.Gitlab) -> dict[str, Any]:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            return dict(mr.discussions.get(discussion_id, **_ONCE).asdict())

        return await self._call(f"GET {_mr_path(project_id, iid)}/discussions/{discussion_id}", fetch)

    async def create_thread(self, project_id: int | str, iid: int, body: str, internal: bool) -> PostedNote:
        """A new top-level discussion (thread) on the MR."""
        def create(gl: gitlab.Gitlab) -> PostedNote:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            data: dict[str, Any] = {"body": self._redact(body)}
            if internal:
                data["internal"] = True
            disc = mr.discussions.create(data, **_ONCE)
            return PostedNote(str(disc.id), int(disc.attributes["notes"][0]["id"]))

        return await self._call(f"POST {_mr_path(project_id, iid)}/discussions", create, retry=False)

    async def create_note(self, project_id: int | str, iid: int, body: str, internal: bool = False) -> PostedNote:
        """A plain MR note (POST /notes): not a thread, so never one a merge rule waits to see resolved."""
        def create(gl: gitlab.Gitlab) -> PostedNote:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            note = mr.notes.create({"body": self._redact(body), **({"internal": True} if internal else {})}, **_ONCE)
            return PostedNote("", int(note.id))

        return await self._call(f"POST {_mr_path(project_id, iid)}/notes", create, retry=False)

    async def edit_note(self, project_id: int | str, iid: int, note_id: int, body: str) -> None:
        """PUT a plain note's body (idempotent: retried like a read)."""
        def update(gl: gitlab.Gitlab) -> None:
            gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True).notes.update(
                note_id, {"body": self._redact(body)}, **_ONCE)

        await self._call(f"PUT {_mr_path(project_id, iid)}/notes/{note_id}", update)

    async def delete_note(self, project_id: int | str, iid: int, note_id: int) -> None:
        """DELETE one of the bot's plain notes (idempotent: a second delete finds it gone)."""
        def delete(gl: gitlab.Gitlab) -> None:
            gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True).notes.delete(note_id, **_ONCE)

        await self._call(f"DELETE {_mr_path(project_id, iid)}/notes/{note_id}", delete)

    async def reply(self, project_id: int | str, iid: int, discussion_id: str, body: str) -> PostedNote:
        def add(gl: gitlab.Gitlab) -> PostedNote:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            disc = mr.discussions.get(discussion_id, lazy=True)
            note = disc.notes.create({"body": self._redact(body)}, **_ONCE)
            return PostedNote(discussion_id, int(note.id))

        return await self._call(f"POST {_mr_path(project_id, iid)}/discussions/{discussion_id}/notes", add,
                                retry=False)

    async def update_note(self, project_id: int | str, iid: int, discussion_id: str, note_id: int, body: str) -> None:
        def update(gl: gitlab.Gitlab) -> None:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            disc = mr.discussions.get(discussion_id, lazy=True)
            disc.notes.update(note_id, {"body": self._redact(body)}, **_ONCE)

        # A PUT of the same body is idempotent: retried like a read.
        await self._call(f"PUT {_mr_path(project_id, iid)}/discussions/{discussion_id}/notes/{note_id}", update)

    async def resolve_thread(self, project_id: int | str, iid: int, discussion_id: str) -> None:
        def resolve(gl: gitlab.Gitlab) -> None:
            mr = gl.projects.get(project_id, lazy=True).mergerequests.get(iid, lazy=True)
            mr.discussions.update(discussion_id, {"resolved": True}, **_ONCE)

        await self._call(f"PUT {_mr_path(project_id, iid)}/discussions/{discussion_id}", resolve)

    async def post_note_once(
        self, project_id: int | str, iid: int, body: str, *, discussion_id: str | None, internal: bool,
        is_mine: Callable[[str], bool], plain: bool = False,
    ) -> PostedNote:
        """Post `body` as a reply in `discussion_id` (else as a new thread, or with `plain` a plain note) exactly
        once. After a failed POST
        the bot's notes on the MR are searched with `is_mine(note body)` before the POST is repeated; after
        an unanswered one, until GitLab can no longer commit it, even after the last attempt."""
        for attempt in range(1, budgets.GITLAB_ATTEMPTS + 1):
            sent_at = time.monotonic()
            try:
                if discussion_id:
                    return await self.reply(project_id, iid, discussion_id, body)
                if plain:
                    return await self.create_note(project_id, iid, body, internal)
                return await self.create_thread(project_id, iid, body, internal=internal)
            except OutcomeUnknown:
                found = await self._find_until(project_id, iid, is_mine, sent_at + self._settle_s)
                if found is None and attempt == budgets.GITLAB_ATTEMPTS:
                    raise
            except TransientError:
                if attempt == budgets.GITLAB_ATTEMPTS:
                    raise
                await asyncio.sleep(budgets.GITLAB_RETRY_BASE_S * 2 ** (attempt - 1))
                found = await self.find_own_note(project_id, iid, is_mine)
            if found is not None:
                log.info("GitLab stored the note despite the error; not posting it again (note %s)", found.note_id)
                return found
        raise AssertionError("unreachable")

    async def _find_until(
        self, project_id: int | str, iid: int, is_mine: Callable[[str], bool], settled_at: float
    ) -> PostedNote | None:
        """The bot's note, looked for until a search starting at `settled_at` (monotonic) or later: only
        such a search proves the unanswered POST left nothing, so that repeating it cannot make a second."""
        while True:
            settled = time.monotonic() >= settled_at
            found = await self.find_own_note(project_id, iid, is_mine)
            if found is not None or settled:
                return found
            await asyncio.sleep(min(budgets.GITLAB_SETTLE_POLL_S, max(0.0, settled_at - time.monotonic())))

    async def find_own_note(
        self, project_id: int | str, iid: int, is_mine: Callable[[str], bool]
    ) -> PostedNote | None:
        """The first note written by the bot on the MR whose body satisfies `is_mine`."""
        bot_id = await self.bot_user_id()
        for discussion in await self.discussions(project_id, iid):
            for note in discussion.get("notes") or []:
                if _author_id(note) == bot_id and is_mine(str(note.get("body") or "")):
                    return PostedNote(str(discussion["id"]), int(note["id"]))
        return None


def _author_id(note: Mapping[str, Any]) -> int | None:
    author = note.get("author") or {}
    return author.get("id") if isinstance(author, Mapping) else None
