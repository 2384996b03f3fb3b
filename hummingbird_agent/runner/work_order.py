"""WorkOrder: the continuation message between phase 1 (validate, decide) and phase 2 (run a workflow).

It crosses the queue as JSON, so `from_json` validates it like any other untrusted input.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, ConfigDict, TypeAdapter, ValidationError

from hummingbird_agent.errors import PermanentError
from hummingbird_agent.gitlab.markers import is_session_id

WorkKind = Literal["new_session", "resume_session", "decide_status"]
"""`decide_status`: a pipeline event that runs no workflow still re-decides the workflow's commit status."""
Trigger = Literal["pipeline", "merge_request", "command", "reply"]
T = TypeVar("T")
# Session ids of new runs derive from the event's identity, so a redelivered or duplicated event maps
# to the same session (and so the same FIFO group and the same note) instead of a second run.
_SESSION_NAMESPACE = uuid.UUID("6f0c1c55-3a55-4c59-9f43-0c6a3b1f2e10")


def _uuid(value: str) -> str:
    if not is_session_id(value):
        raise ValueError("session id must be a UUID")
    return value


SessionId = Annotated[str, AfterValidator(_uuid)]


def derive_session_id(*parts: object) -> str:
    return str(uuid.uuid5(_SESSION_NAMESPACE, "\x1f".join(str(p) for p in parts)))


@dataclass(frozen=True, slots=True)
class WorkOrder:
    """One unit of phase-2 work. Automatic triggers are rate-limited; commands and replies are not."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # validated by from_json, like any queue input

    kind: WorkKind
    session_id: SessionId
    workflow: str
    trigger: Trigger
    project_id: int
    project: str
    mr_iid: int
    sha: str | None = None
    pipeline_id: int | None = None
    discussion_id: str | None = None
    """Thread the command or reply came from; the answer goes there (see internal_notes)."""
    discussion_internal: bool = False
    note_id: int | None = None
    """The user's note (command or reply) this order answers."""
    message: str | None = None
    """The user's text: command arguments, or the reply that resumes a session."""
    user_id: int | None = None

    @property
    def automatic(self) -> bool:
        return self.trigger in ("pipeline", "merge_request")

    def to_json(self) -> dict[str, Any]:
        return {"work_order": asdict(self)}

    @staticmethod
    def from_json(body: Any) -> WorkOrder:
        return from_queue(_ADAPTER, body, "work_order", "continuation")


def from_queue(adapter: TypeAdapter[T], body: Any, key: str, what: str) -> T:
    """`body[key]` validated as the queue message `what` carries it; PermanentError (the message is dropped) when
    malformed."""
    if not isinstance(body, dict) or not isinstance(body.get(key), dict):
        raise PermanentError(f"malformed {what}: no {key} object")
    try:
        return adapter.validate_python(body[key])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PermanentError(f"malformed {what}: {where}: {first['msg']}") from None


_ADAPTER = TypeAdapter(WorkOrder)
