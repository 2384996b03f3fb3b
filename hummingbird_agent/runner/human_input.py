"""The built-in `request_human_input` tool of the service's learning runs: it asks in the incident's thread
(the analysis thread) and answers with what Developer+ members replied there since. The question is posted
once; a learning run that finds no answer yet goes on without it, and the next one (`/hummingbird learn`,
learn-on-success) reads the answer. The reviewer's "no investigation procedure captured" gap is routed to it
before any planning (ContextEnricher)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from hummingbird_agent.bamboo.learn.reviewer import HUMAN_INPUT_TOOL
from hummingbird_agent.bamboo.mcp import BuiltinMcpClient, McpClient
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from hummingbird_agent.gitlab.client import DEVELOPER_ACCESS, GitLabClient
from hummingbird_agent.gitlab.markers import inert
from hummingbird_agent.gitlab.quiet import quiet_markdown
from hummingbird_agent.tools import ToolDef

log = logging.getLogger(__name__)
QUESTION_MARK = "<!-- hummingbird-question -->"
SCHEMA = {"type": "object", "properties": {"prompt": {"type": "string", "minLength": 1, "maxLength": 2000}},
          "required": ["prompt"]}
DESCRIPTION = ("Ask the engineers in the incident's merge-request thread; returns what Developer+ members "
               "answered (empty until someone has).")


@dataclass(frozen=True, slots=True)
class Thread:
    project_id: int
    mr_iid: int
    discussion_id: str
    internal: bool


def question_body(prompt: str) -> str:
    asked = quiet_markdown(inert(prompt))
    return (f"**Question from the knowledge base:** {asked}\n\nReply in this thread (Developer access or "
            f"higher); the answer is used the next time this failure is learned (`/hummingbird learn`).\n\n"
            f"{QUESTION_MARK}")


class ThreadQuestions:
    """Per learning run, the thread its incident's questions go to (`asking`); `clients(incident)` gives the
    tool bound to that thread, or nothing outside a run."""

    def __init__(self, gitlab: GitLabClient) -> None:
        self._gitlab = gitlab
        self._threads: dict[str, Thread] = {}

    @contextlib.contextmanager
    def asking(self, incident_id: str, thread: Thread) -> Iterator[None]:
        self._threads[incident_id] = thread
        try:
            yield
        finally:
            self._threads.pop(incident_id, None)

    def clients(self, incident: IncidentInput) -> Sequence[McpClient]:
        thread = self._threads.get(incident.incident_id or "")
        if thread is None:
            return ()
        tool = ToolDef(HUMAN_INPUT_TOOL, DESCRIPTION, SCHEMA, partial(self.ask, thread), read_only=False)
        return (BuiltinMcpClient([tool], name="human-input"),)

    async def ask(self, thread: Thread, prompt: str) -> str:
        """The members' answers after the bot's question in the thread; "" (after posting it) when none yet."""
        discussion = await self._gitlab.discussion(thread.project_id, thread.mr_iid, thread.discussion_id)
        bot = await self._gitlab.bot_user_id()
        notes: list[dict[str, Any]] = list(discussion.get("notes") or [])
        asked = next((i for i, n in enumerate(notes) if _author(n) == bot and QUESTION_MARK in str(n.get("body"))),
                     None)
        if asked is None:
            await self._gitlab.post_note_once(thread.project_id, thread.mr_iid, question_body(prompt),
                                              discussion_id=thread.discussion_id, internal=thread.internal,
                                              is_mine=lambda text: QUESTION_MARK in text)
            log.info("asked in thread %s: %s", thread.discussion_id, prompt[:120])
            return ""
        answers = []
        for note in notes[asked + 1:]:
            author = _author(note)
            if author is None or author == bot:
                continue
            if await self._gitlab.access_level(thread.project_id, author) >= DEVELOPER_ACCESS:
                answers.append(str(note.get("body") or "").strip())
        return "\n\n".join(a for a in answers if a)


def _author(note: dict[str, Any]) -> int | None:
    author = (note.get("author") or {}).get("id")
    return author if isinstance(author, int) else None
