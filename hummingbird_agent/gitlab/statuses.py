"""The service's own commit status on an analysed commit, set exactly once per state.

Posting a status creates one (GitLab opens a new one when the last of that name is finished), so a POST
that failed is never repeated before the commit's statuses show it did not land.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from hummingbird_agent import budgets
from hummingbird_agent.errors import AgentError, OutcomeUnknown, TransientError
from hummingbird_agent.gitlab.client import GitLabClient

log = logging.getLogger(__name__)
# GitLab's limit on a status description (longer ones are refused).
DESCRIPTION_MAX_CHARS = 255


@dataclass(frozen=True, slots=True)
class CommitStatus:
    """A status to set on a commit once the note it links to is known."""

    sha: str
    name: str
    state: str
    description: str


async def _current(client: GitLabClient, project_id: int, sha: str, name: str) -> str:
    """The state of the newest status named `name` on the commit ("" when there is none)."""
    mine = [s for s in await client.commit_statuses(project_id, sha) if s.get("name") == name]
    return str(max(mine, key=lambda s: int(s.get("id") or 0)).get("status") or "") if mine else ""


async def set_status(client: GitLabClient, project_id: int, sha: str, *, name: str, state: str,
                     target_url: str, description: str) -> bool:
    """Set the status `name` to `state` unless it already has it; True when this call posted it."""
    fields = {"state": state, "name": name, "target_url": target_url,
              "description": description[:DESCRIPTION_MAX_CHARS]}
    for attempt in range(1, budgets.GITLAB_ATTEMPTS + 1):
        if await _current(client, project_id, sha, name) == state:
            return False
        try:
            await client.post_commit_status(project_id, sha, fields)
            return True
        except (OutcomeUnknown, TransientError) as exc:
            if attempt == budgets.GITLAB_ATTEMPTS:
                raise
            log.warning("commit status %s on %s: %s; looking for it before posting again", name, sha[:12], exc)
            await asyncio.sleep(budgets.GITLAB_RETRY_BASE_S * 2 ** (attempt - 1))
    raise AssertionError("unreachable")


async def publish(client: GitLabClient, project_id: int, status: CommitStatus, target_url: str) -> None:
    """`status` on its commit, linked to `target_url`; a failure is logged, not raised: the note it links to is
    posted and says everything the status would."""
    try:
        await set_status(client, project_id, status.sha, name=status.name, state=status.state, target_url=target_url,
                         description=status.description)
    except AgentError as exc:
        log.warning("commit status %s not set: %s", status.name, exc)
