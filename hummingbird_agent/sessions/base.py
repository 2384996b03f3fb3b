"""The session store interface (local directory now, S3 later) and session-id validation."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from hummingbird_agent.errors import PermanentError

CONTEXT_FILE = "context.json"
TRANSCRIPT_FILE = "transcript.md"
ARCHIVE_FILE = "sandbox.tar.gz"


def validate_session_id(value: str) -> str:
    """`value` if it is a canonical UUID; PermanentError otherwise (ids become paths and keys)."""
    try:
        parsed = uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        raise PermanentError(f"invalid session id {str(value)[:40]!r}: not a UUID") from None
    if str(parsed) != value:
        raise PermanentError(f"invalid session id {value[:40]!r}: not a canonical UUID")
    return value


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A loaded session: the context.json object, the transcript, and the sandbox archive if there is one."""

    context: Mapping[str, Any]
    transcript: str
    archive: Callable[[], AsyncIterator[bytes]] | None


class SessionStore(Protocol):
    """Where sessions live between runs. Both backends store context.json, transcript.md, sandbox.tar.gz."""

    async def save(
        self,
        session_id: str,
        context: Mapping[str, Any],
        transcript: str,
        archive_chunks: AsyncIterable[bytes] | None,
    ) -> None: ...

    async def load(self, session_id: str) -> StoredSession:
        """PermanentError when there is no such session or it is unreadable."""

    async def exists(self, session_id: str) -> bool: ...
