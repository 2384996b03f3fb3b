"""Which merge base the analysed commit's failures are compared with: the MR's own when the commit is its head, else
that of the MR's version that showed the commit (an older head, after a push or a force-push). A commit no version
shows has no base the triage can prove."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hummingbird_agent.tools.base import ToolResult
from hummingbird_agent.triage.reader import TriageReader, Unread


@dataclass(frozen=True, slots=True)
class Base:
    """The merge base (`sha`, "" when not known) and why it is not proven (`problem`, "" when it is)."""

    sha: str
    problem: str = ""


async def base_of(reader: TriageReader, mr: Mapping[str, Any], iid: int, sha: str) -> Base:
    """The base `sha` was built on: the MR's `diff_refs` base when `sha` is the head they show, else the base of the
    newest version whose head it is (GitLab lists versions newest first, so a cut list still holds the newest)."""
    refs = mr.get("diff_refs") or {}
    if sha == refs.get("head_sha"):
        return Base(str(refs.get("base_sha") or ""))
    found = await reader.call("gitlab_list_mr_versions", mr_iid=iid)
    if isinstance(found, Unread):
        return Base("", f"commit {sha[:12]} is not the MR's head and its versions could not be read: {found.reason}")
    versions = _versions(found)
    mine = next((v for v in versions if v.get("head_commit_sha") == sha), None)
    if mine is not None and mine.get("base_commit_sha"):
        return Base(str(mine["base_commit_sha"]))
    if isinstance(found, ToolResult) and found.truncated:
        why = f"the newest {len(versions)} of its versions were read, and none shows it"
    else:
        why = f"none of its {len(versions)} versions shows it"
    return Base("", f"commit {sha[:12]} is not the head of !{iid}, and {why}: the base it was built on is not known")


def _versions(found: Any) -> list[Mapping[str, Any]]:
    listed = found.content if isinstance(found, ToolResult) else found
    return [v for v in listed if isinstance(v, Mapping)] if isinstance(listed, list) else []
