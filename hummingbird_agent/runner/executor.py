"""The seam between the conversation layer and the agent engine: run one workflow for a WorkOrder."""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable, Mapping
from typing import Any, Protocol

from hummingbird_agent.runner.work_order import WorkOrder
from hummingbird_agent.sessions.base import StoredSession

# publish(ok, text): called once with the final note text (ok) or a one-line failure reason (not ok),
# before the session is saved: the note is always delivered first (seed §11.2).
Publish = Callable[[bool, str], Awaitable[None]]
# save(context, transcript, archive chunks): persists the session; its failures never reach the note.
SaveSession = Callable[[Mapping[str, Any], str, AsyncIterable[bytes] | None], Awaitable[None]]


class Executor(Protocol):
    async def run(self, order: WorkOrder, resume: StoredSession | None, publish: Publish, save: SaveSession) -> None:
        """Run the order's workflow in a sandbox. Raises AgentError only when the run could not start."""
