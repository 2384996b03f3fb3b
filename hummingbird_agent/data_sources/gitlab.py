"""GitLab data source (read token): MR details, diff and discussions, files, commit statuses, job logs
and repository archives; unbounded outputs are streamed (JSONL, .log, .tar.gz)."""

from __future__ import annotations

import codecs
import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import gitlab
import gitlab.exceptions as glexc

from hummingbird_agent import budgets
from hummingbird_agent.data_sources.gitlab_api import call as _call
from hummingbird_agent.data_sources.gitlab_api import project_of as _project
from hummingbird_agent.data_sources.gitlab_discussions import (
    REDACTED_DESCRIPTION,
    REDACTED_STATUS_DESCRIPTION,
    REDACTED_TITLE,
    filter_discussions,
    gate_mr_text,
    gate_status,
)
from hummingbird_agent.data_sources.gitlab_pipelines import JOB_KEYS as _JOB_KEYS
from hummingbird_agent.data_sources.gitlab_pipelines import TOOL_DEFS as PIPELINE_TOOL_DEFS
from hummingbird_agent.data_sources.log_preview import LogTail
from hummingbird_agent.gitlab.client import DEVELOPER_ACCESS
from hummingbird_agent.gitlab.error_map import map_gitlab_errors
from hummingbird_agent.tools.base import StreamingResponse, ToolDef, ToolResult
from hummingbird_agent.tools.registry import ToolRegistry

SOURCE = "gitlab"
# The error kind of a call on a project the read token cannot see; GitLab's message for it is fixed.
NO_ACCESS = "no_access"
_PROJECT_HIDDEN = "HTTP 404: 404 Project Not Found"
# CSI (colours, `\e[0K`), terminated OSC (titles, links), and two-byte escapes other than `\e[` / `\e]`.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\^_=>])")
_STATUS_KEYS = ("id", "name", "status", "stage", "ref", "sha", "target_url", "allow_failure", "description",
                "created_at", "started_at", "finished_at")
_PROJECT_KEYS = ("id", "path_with_namespace", "default_branch", "ci_config_path", "visibility", "archived",
                 "web_url")
_MR_KEYS = ("iid", "project_id", "title", "description", "state", "draft", "sha", "source_branch", "target_branch",
            "labels", "web_url", "created_at", "updated_at", "merge_status", "diff_refs")


def _member_check(proj: Any) -> Callable[[int], bool]:
    """`is_trusted(user_id)`: Developer+ on the project (inherited included); each user looked up once."""
    levels: dict[int, bool] = {}

    def is_trusted(user_id: int) -> bool:
        if user_id not in levels:
            try:
                levels[user_id] = int(proj.members_all.get(user_id).access_level) >= DEVELOPER_ACCESS
            except glexc.GitlabGetError as exc:
                if exc.response_code != 404:
                    raise
                levels[user_id] = False
        return levels[user_id]

    return is_trusted


def get_project(gl: gitlab.Gitlab, project: str) -> dict[str, Any] | ToolResult:
    # Settings only: the description is free text by whoever can edit the project.
    def fetch() -> dict[str, Any]:
        attrs = gl.projects.get(project).asdict()
        return {k: attrs.get(k) for k in _PROJECT_KEYS}

    return _call(f"project {project}", fetch)


def get_mr_details(gl: gitlab.Gitlab, project: str, mr_iid: int) -> dict[str, Any] | ToolResult:
    def fetch() -> dict[str, Any]:
        proj = _project(gl, project)
        mr = proj.mergerequests.get(mr_iid).asdict()
        out = {k: mr.get(k) for k in _MR_KEYS}
        gate_mr_text(mr, out, _member_check(proj))  # the discussions' gate
        out["author"] = (mr.get("author") or {}).get("username")
        pipeline = mr.get("head_pipeline") or mr.get("pipeline") or {}
        out["head_pipeline"] = {k: pipeline.get(k) for k in ("id", "status", "web_url")} if pipeline else None
        return out

    return _call(f"MR !{mr_iid} of {project}", fetch)


def _status_lines(statuses: Iterable[Any], is_trusted: Callable[[int], bool], context: str) -> Iterator[bytes]:
    with map_gitlab_errors(context):
        for status in statuses:
            attrs = status.asdict()
            shown = {k: attrs.get(k) for k in _STATUS_KEYS}
            gate_status(attrs, shown, is_trusted)
            yield json.dumps(shown, ensure_ascii=False).encode() + b"\n"


def get_commit_statuses(gl: gitlab.Gitlab, project: str, sha: str) -> StreamingResponse | ToolResult:
    context = f"statuses of {sha[:12]} in {project}"
    proj = _project(gl, project)
    # The first page is fetched here, so a missing project fails now; later pages stream.
    pages = _call(context, lambda: proj.commits.get(sha, lazy=True).statuses.list(iterator=True, all=True,
                                                                                  per_page=100))
    if isinstance(pages, ToolResult):
        return pages
    return StreamingResponse(_status_lines(pages, _member_check(proj), context), suffix=".jsonl")


def get_mr_diff(gl: gitlab.Gitlab, project: str, mr_iid: int) -> list[dict[str, Any]] | ToolResult:
    def fetch() -> list[dict[str, Any]]:
        path = f"/projects/{_project(gl, project).encoded_id}/merge_requests/{mr_iid}/diffs"
        keys = ("old_path", "new_path", "new_file", "renamed_file", "deleted_file", "diff")
        return [{k: d.get(k) for k in keys} for d in gl.http_list(path, iterator=True, per_page=100)]

    return _call(f"diff of !{mr_iid} in {project}", fetch)


def get_file_at_ref(gl: gitlab.Gitlab, project: str, path: str, ref: str) -> str | ToolResult:
    data = _call(f"file {path} at {ref} in {project}", lambda: _project(gl, project).files.raw(file_path=path, ref=ref))
    return data if isinstance(data, ToolResult) else bytes(data).decode("utf-8", errors="replace")


def get_repo_archive(gl: gitlab.Gitlab, project: str, ref: str) -> StreamingResponse | ToolResult:
    chunks = _call(f"archive of {project} at {ref}", lambda: _project(gl, project).repository_archive(
        sha=ref, format="tar.gz", iterator=True, chunk_size=budgets.STREAM_CHUNK_BYTES))
    if isinstance(chunks, ToolResult):
        return chunks
    return StreamingResponse(chunks, suffix=".tar.gz", binary=True)


def strip_ansi_stream(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Decode (invalid bytes -> U+FFFD), strip ANSI escapes chunk by chunk, re-encode. A chunk ending inside
    an escape sequence keeps that tail for the next chunk; a character split across chunks stays whole."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    carry = ""
    for chunk in chunks:
        text = carry + decoder.decode(chunk)
        cut = text.rfind("\x1b", max(0, len(text) - budgets.ANSI_CARRY_MAX_BYTES))
        match = _ANSI.match(text, cut) if cut >= 0 else None
        if cut >= 0 and (match is None or match.end() == len(text)):
            text, carry = text[:cut], text[cut:]
        else:
            carry = ""
        if text:
            yield _ANSI.sub("", text).encode()
    tail = carry + decoder.decode(b"", final=True)
    if tail:
        yield _ANSI.sub("", tail).encode()


def get_job(gl: gitlab.Gitlab, project: str, job_id: int) -> dict[str, Any] | ToolResult:
    def fetch() -> dict[str, Any]:
        job = _project(gl, project).jobs.get(job_id).asdict()
        out = {k: job.get(k) for k in _JOB_KEYS}
        out["pipeline_id"] = (job.get("pipeline") or {}).get("id")
        out["runner"] = (job.get("runner") or {}).get("description")
        return out

    return _call(f"job {job_id} in {project}", fetch)


def get_job_log(gl: gitlab.Gitlab, project: str, job_id: int) -> StreamingResponse | ToolResult:
    context = f"log of job {job_id} in {project}"
    trace = _call(context, lambda: _project(gl, project).jobs.get(job_id, lazy=True).trace(
        iterator=True, chunk_size=budgets.STREAM_CHUNK_BYTES))
    if isinstance(trace, ToolResult):
        return trace
    tail = LogTail()
    return StreamingResponse(tail.tee(strip_ansi_stream(trace)), suffix=".log", preview=tail.preview)


def get_mr_discussions(gl: gitlab.Gitlab, project: str, mr_iid: int) -> list[dict[str, Any]] | ToolResult:
    proj = _project(gl, project)
    is_trusted = _member_check(proj)  # per call: an author is looked up once

    def fetch() -> list[dict[str, Any]]:
        mr = proj.mergerequests.get(mr_iid, lazy=True)
        return filter_discussions((d.asdict() for d in mr.discussions.list(iterator=True, per_page=100)), is_trusted)

    return _call(f"discussions of !{mr_iid} in {project}", fetch)


_PROJECT = {"type": "string", "minLength": 1, "maxLength": 255,
            "description": "Project path (group/name) or numeric id."}
_IID = {"type": "integer", "minimum": 1, "description": "Merge request IID (the !number)."}
_REF = {"type": "string", "minLength": 1, "maxLength": 255, "description": "Branch, tag or commit SHA."}


def _schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


TOOL_DEFS = (
    ToolDef("gitlab_get_project", "Project settings: default branch, CI config file (ci_config_path: empty means "
            ".gitlab-ci.yml; `path@group/project` or a URL means a file outside this repository), visibility, URL.",
            _schema(project=_PROJECT), get_project),
    ToolDef("gitlab_get_mr_details", "Merge request metadata: title, description, author, head SHA, branches, "
            "labels, URLs. The title and description of an author without Developer access are withheld as "
            f"'{REDACTED_TITLE}' and '{REDACTED_DESCRIPTION}'.",
            _schema(project=_PROJECT, mr_iid=_IID), get_mr_details),
    ToolDef("gitlab_get_commit_statuses", "Every CI status of a commit as JSONL (Konflux external statuses and GitLab "
            "CI jobs): name, status, target_url (job or PipelineRun page), allow_failure. A description posted by a "
            f"user without Developer access is withheld as '{REDACTED_STATUS_DESCRIPTION}'.",
            _schema(project=_PROJECT, sha={"type": "string", "pattern": "^[0-9a-f]{7,64}$"}), get_commit_statuses),
    ToolDef("gitlab_get_mr_diff", "Changed files of a merge request with their unified diffs.",
            _schema(project=_PROJECT, mr_iid=_IID), get_mr_diff),
    ToolDef("gitlab_get_file_at_ref", "Raw content of one repository file at a ref.",
            _schema(project=_PROJECT, path={"type": "string", "minLength": 1, "maxLength": 1024}, ref=_REF),
            get_file_at_ref),
    ToolDef("gitlab_get_repo_archive", "The repository at a ref as a tar.gz file in the sandbox (binary; unpack "
            "it with tar in sandbox_exec).", _schema(project=_PROJECT, ref=_REF), get_repo_archive),
    ToolDef("gitlab_get_job", "Metadata of one GitLab CI job: stage, status, failure_reason (script_failure, "
            "runner_system_failure, stuck_or_timeout_failure, ...), the runner tags it required (tag_list), runner, "
            "pipeline id.", _schema(project=_PROJECT, job_id={"type": "integer", "minimum": 1}), get_job),
    ToolDef("gitlab_get_job_log", "Log (trace) of a GitLab CI job, ANSI colours removed. The job id is the last "
            "number of the status target_url.",
            _schema(project=_PROJECT, job_id={"type": "integer", "minimum": 1}), get_job_log),
    ToolDef("gitlab_get_mr_discussions", "MR discussion threads. Comments by non-members are withheld as "
            "'[redacted: non-member comment]'; agent notes are reduced to their review text.",
            _schema(project=_PROJECT, mr_iid=_IID), get_mr_discussions),
    *PIPELINE_TOOL_DEFS,
)

TOOL_NOTES = """\
Konflux checks appear as commit statuses whose name contains "Konflux"; only status "failed" matters
(pending, running, success and canceled are not failures). A status target_url leads to the Konflux
cluster and namespace, or for GitLab CI to /-/jobs/<job_id>. Comments, MR titles and descriptions and status
descriptions marked redacted were written by users without Developer access: their content is withheld on
purpose; never guess it."""


def register(registry: ToolRegistry, gitlab_url: str, token: str,
             timeout_s: float = budgets.DATA_SOURCE_HTTP_TIMEOUT_S, reader: str = "the GitLab read token") -> None:
    """Register the GitLab tools with a read-token client bound in (no request is made here). `reader` names
    the token (never its value) in the one line a project it cannot read becomes."""
    gl = gitlab.Gitlab(gitlab_url, private_token=token, retry_transient_errors=True, timeout=timeout_s)
    tools = [dataclasses.replace(t, handler=functools.partial(_readable, t.handler, gl, reader)) for t in TOOL_DEFS]
    registry.register_data_source(SOURCE, tools, TOOL_NOTES)


def _readable(handler: Callable[..., Any], gl: gitlab.Gitlab, reader: str, **args: Any) -> Any:
    """The handler's output; GitLab's 404 for a project the token may not see (it hides private projects the
    same way as missing ones) becomes one line naming the project and the token's variable, the same for every
    tool, so the note states it once."""
    output = handler(gl, **args)
    if isinstance(output, ToolResult) and not output.ok and _PROJECT_HIDDEN in str(output.content):
        return ToolResult.error(NO_ACCESS, f"{reader} cannot read project {args.get('project')} "
                                           "(HTTP 404: it does not exist or that token may not see it)")
    return output
