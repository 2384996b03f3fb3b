"""Citations of past incidents: ids of incidents learned from a merge request, and the note footer that
lists what the knowledge tools returned during a run (deterministic, whatever the model wrote)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.gitlab.note_text import mr_url
from hummingbird_agent.tools.base import ToolDef

# `group/project!7:1a2b3c4d`: the MR it was learned from, then the analysis session it came from.
_MR_INCIDENT = re.compile(r"^(?P<project>[\w.\-]+(?:/[\w.\-]+)+)!(?P<iid>\d+)(?::[\w\-]+)?$")
FOOTER_TITLE = "**Past incidents returned by the knowledge base:**"


def learned_incident_id(project: str, iid: int, analysis_session: str) -> str:
    """One incident per analysed failure: learning it again replaces it instead of adding a copy."""
    return f"{project}!{iid}:{analysis_session[:8]}"


def incident_link(incident_id: str, gitlab_url: str) -> str:
    """`id` in code, followed by a link to its merge request when the id names one."""
    match = _MR_INCIDENT.match(incident_id)
    if match is None:
        return f"`{incident_id}`"
    url = mr_url(gitlab_url, match["project"], match["iid"])
    return f"`{incident_id}` ([!{match['iid']}]({url}))"


def returned_incidents(output: Any) -> list[str]:
    """Incident ids in a knowledge tool's output: similar incidents and the incidents causes rest on."""
    if not isinstance(output, Mapping):
        return []
    ids = [str(i.get("incident_id")) for i in output.get("incidents") or [] if isinstance(i, Mapping)]
    for candidate in output.get("candidates") or []:
        if isinstance(candidate, Mapping):
            ids += [str(i) for i in candidate.get("incidents") or []]
    return [i for i in ids if i and i != "None"]


class Citations:
    """Collects, for one run, the incidents the wrapped tools returned, in first-seen order."""

    def __init__(self, gitlab_url: str) -> None:
        self._gitlab_url = gitlab_url
        self._ids: dict[str, None] = {}

    @property
    def incidents(self) -> list[str]:
        return list(self._ids)

    def record(self, output: Any) -> None:
        self._ids.update(dict.fromkeys(returned_incidents(output)))

    def wrap(self, tool: ToolDef) -> ToolDef:
        handler = tool.handler

        async def observed(**args: Any) -> Any:
            output = await handler(**args)
            self.record(output)
            return output

        return dataclasses.replace(tool, handler=observed)

    def footer(self) -> str:
        """The note's citation section, or "" when the tools returned no incident."""
        if not self._ids:
            return ""
        cited = self.incidents[: budgets.BAMBOO_CITED_INCIDENTS_MAX]
        return "\n\n---\n" + FOOTER_TITLE + "\n" + "\n".join(
            f"- {incident_link(i, self._gitlab_url)}" for i in cited)
