"""GitLab webhook bodies -> the few facts the handlers act on. Untrusted input, validated here only.

Unknown fields are ignored (GitLab adds fields over time); missing or mistyped required ones raise
PermanentError with one line naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from hummingbird_agent.errors import PermanentError


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Project(_Lenient):
    id: int
    path_with_namespace: str


class _User(_Lenient):
    id: int | None = None
    username: str = ""


class _MergeRequestRef(_Lenient):
    iid: int
    title: str = ""
    target_branch: str = ""
    source_branch: str = ""
    draft: bool | None = None
    work_in_progress: bool | None = None
    last_commit: dict[str, Any] | None = None


class _PipelineAttrs(_Lenient):
    id: int
    status: str
    source: str = ""
    sha: str = ""
    ref: str = ""


class _PipelineBody(_Lenient):
    object_attributes: _PipelineAttrs
    project: _Project
    user: _User = _User()
    merge_request: _MergeRequestRef | None = None


class _MRAttrs(_MergeRequestRef):
    action: str = ""
    oldrev: str | None = None


class _MRBody(_Lenient):
    object_attributes: _MRAttrs
    project: _Project
    user: _User = _User()


class _NoteAttrs(_Lenient):
    id: int
    note: str = ""
    noteable_type: str = ""
    author_id: int
    action: str | None = None
    discussion_id: str | None = None
    type: str | None = None
    system: bool | None = None
    internal: bool | None = None
    confidential: bool | None = None


class _NoteBody(_Lenient):
    object_attributes: _NoteAttrs
    project: _Project
    user: _User = _User()
    merge_request: _MergeRequestRef | None = None


@dataclass(frozen=True, slots=True)
class MergeRequestRef:
    project_id: int
    project: str
    iid: int
    title: str
    target_branch: str
    sha: str | None


@dataclass(frozen=True, slots=True)
class PipelineEvent:
    mr: MergeRequestRef | None
    """The MR of a merge request pipeline; None for any other pipeline (a branch's, a tag's, a schedule's)."""
    project_id: int
    project: str
    pipeline_id: int
    status: str
    source: str
    sha: str
    username: str
    ref: str = ""
    """The branch or tag the pipeline ran on."""


@dataclass(frozen=True, slots=True)
class MergeRequestEvent:
    mr: MergeRequestRef
    action: str
    draft: bool
    username: str


@dataclass(frozen=True, slots=True)
class NoteEvent:
    mr: MergeRequestRef | None
    note_id: int
    body: str
    author_id: int
    username: str
    action: str | None
    discussion_id: str | None
    note_type: str | None
    system: bool
    internal: bool


def _validate(model: type[_Lenient], body: Any, kind: str) -> Any:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PermanentError(f"malformed {kind} webhook: {where}: {first['msg']}") from None


def _mr_ref(project: _Project, mr: _MergeRequestRef, sha: str | None = None) -> MergeRequestRef:
    last = (mr.last_commit or {}).get("id")
    return MergeRequestRef(
        project_id=project.id,
        project=project.path_with_namespace,
        iid=mr.iid,
        title=mr.title,
        target_branch=mr.target_branch,
        sha=sha or (last if isinstance(last, str) else None),
    )


def parse_pipeline(body: Any) -> PipelineEvent:
    p = _validate(_PipelineBody, body, "pipeline")
    attrs = p.object_attributes
    mr = _mr_ref(p.project, p.merge_request, attrs.sha) if p.merge_request else None
    return PipelineEvent(mr, p.project.id, p.project.path_with_namespace, attrs.id, attrs.status, attrs.source,
                         attrs.sha, p.user.username, attrs.ref)


def parse_merge_request(body: Any) -> MergeRequestEvent:
    m = _validate(_MRBody, body, "merge_request")
    attrs = m.object_attributes
    return MergeRequestEvent(
        _mr_ref(m.project, attrs), attrs.action, bool(attrs.draft or attrs.work_in_progress), m.user.username
    )


def parse_note(body: Any) -> NoteEvent:
    n = _validate(_NoteBody, body, "note")
    attrs = n.object_attributes
    mr = _mr_ref(n.project, n.merge_request) if n.merge_request else None
    return NoteEvent(
        mr=mr,
        note_id=attrs.id,
        body=attrs.note,
        author_id=attrs.author_id,
        username=n.user.username,
        action=attrs.action,
        discussion_id=attrs.discussion_id,
        note_type=attrs.type,
        system=bool(attrs.system),
        internal=bool(attrs.internal or attrs.confidential),
    )
