"""GitLab pipelines and their jobs (read token): which pipelines ran a commit or a branch, every attempt of their
jobs, retried ones included (a retry that passed is how a flaky job shows), and the child or downstream pipelines
their trigger jobs started."""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Any

import gitlab

from hummingbird_agent import budgets
from hummingbird_agent.data_sources.gitlab_api import call, project_of
from hummingbird_agent.data_sources.gitlab_reports import get_pipeline_test_report, get_pipeline_test_report_summary
from hummingbird_agent.tools.base import ToolDef, ToolResult

_PIPELINE_KEYS = ("id", "sha", "ref", "status", "source", "created_at", "updated_at", "web_url")
JOB_KEYS = ("id", "name", "stage", "status", "failure_reason", "tag_list", "allow_failure", "ref", "web_url",
            "created_at", "started_at", "finished_at", "duration", "erased_at")
_BRIDGE_KEYS = ("id", "name", "stage", "status", "failure_reason", "allow_failure", "web_url", "created_at",
                "started_at", "finished_at")
_DOWNSTREAM_KEYS = ("id", "project_id", "sha", "ref", "status", "source", "web_url")
_PROJECT = {"type": "string", "minLength": 1, "maxLength": 255,
            "description": "Project path (group/name) or numeric id."}


def list_pipelines(gl: gitlab.Gitlab, project: str, sha: str = "", ref: str = "", updated_after: str = "",
                   limit: int = 20) -> list[dict[str, Any]] | ToolResult:
    """Pipelines of a commit or a branch, newest first (one page)."""
    filters = {k: v for k, v in (("sha", sha), ("ref", ref), ("updated_after", updated_after)) if v}

    def fetch() -> list[dict[str, Any]]:
        found = project_of(gl, project).pipelines.list(order_by="id", sort="desc", per_page=min(limit, 100),
                                                       get_all=False, **filters)
        return [{k: p.asdict().get(k) for k in _PIPELINE_KEYS} for p in found]

    return call(f"pipelines of {project}", fetch)


def get_pipeline_jobs(gl: gitlab.Gitlab, project: str, pipeline_id: int, include_retried: bool = True,
                      scope: str = "", max_jobs: int = budgets.TRIAGE_MAX_JOBS_PER_PIPELINE,
                      ) -> list[dict[str, Any]] | ToolResult:
    """Every job of a pipeline (retried attempts included unless told otherwise; `scope`: only jobs in that state),
    oldest first. GitLab lists newest first: a list longer than `max_jobs` loses its oldest attempts, and comes
    back `truncated` with the count GitLab reports, so a reader never takes it for the whole pipeline."""
    def fetch() -> list[dict[str, Any]] | ToolResult:
        jobs = project_of(gl, project).pipelines.get(pipeline_id, lazy=True).jobs.list(
            include_retried=include_retried, iterator=True, per_page=100, **({"scope": [scope]} if scope else {}))
        return _oldest_first(jobs, max_jobs, lambda attrs: {k: attrs.get(k) for k in JOB_KEYS}
                             | {"pipeline_id": pipeline_id})

    return call(f"jobs of pipeline {pipeline_id} in {project}", fetch)


def get_pipeline_bridges(gl: gitlab.Gitlab, project: str, pipeline_id: int,
                         max_bridges: int = budgets.TRIAGE_MAX_BRIDGES_PER_PIPELINE,
                         ) -> list[dict[str, Any]] | ToolResult:
    """Every trigger job (bridge) of a pipeline, oldest first, each with the pipeline it started (a child pipeline of
    the project, or another project's downstream pipeline; None when it started none). GitLab lists newest first: a
    list longer than `max_bridges` loses its oldest bridges and comes back `truncated` with GitLab's count."""
    def shape(attrs: dict[str, Any]) -> dict[str, Any]:
        down = attrs.get("downstream_pipeline")
        return ({k: attrs.get(k) for k in _BRIDGE_KEYS} | {"pipeline_id": pipeline_id, "downstream_pipeline":
                {k: down.get(k) for k in _DOWNSTREAM_KEYS} if isinstance(down, dict) else None})

    def fetch() -> list[dict[str, Any]] | ToolResult:
        bridges = project_of(gl, project).pipelines.get(pipeline_id, lazy=True).bridges.list(iterator=True,
                                                                                               per_page=100)
        return _oldest_first(bridges, max_bridges, shape)

    return call(f"bridges of pipeline {pipeline_id} in {project}", fetch)


def _oldest_first(listed: Any, limit: int, shape: Callable[[dict[str, Any]], dict[str, Any]],
                  ) -> list[dict[str, Any]] | ToolResult:
    """At most `limit` items of a newest-first GitLab list, oldest first; `truncated` with GitLab's total if longer."""
    out = [shape(item.asdict()) for item in islice(listed, limit + 1)]
    kept = sorted(out[:limit], key=lambda item: int(item.get("id") or 0))
    if len(out) <= limit:
        return kept
    total = listed.total if isinstance(listed.total, int) else None
    return ToolResult(True, kept, truncated=True, metadata={"listed": limit, "total": total})


def list_project_jobs(gl: gitlab.Gitlab, project: str, per_page: int = 100) -> ToolResult:
    """One page of the project's newest jobs, every pipeline's, retried attempts included, newest first (GitLab's
    `GET /projects/:id/jobs`, one request): each with its pipeline's id and creation time; `truncated` when older
    jobs exist beyond the page."""
    def fetch() -> ToolResult:
        jobs = project_of(gl, project).jobs.list(per_page=per_page, iterator=True)
        out = []
        for job in islice(jobs, per_page):
            attrs = job.asdict()
            pipeline = attrs.get("pipeline") or {}
            out.append({k: attrs.get(k) for k in JOB_KEYS} | {"pipeline_id": pipeline.get("id"),
                                                                "pipeline_created_at": pipeline.get("created_at")})
        more = jobs.next_page is not None
        return ToolResult(True, out, truncated=more, metadata={"listed": len(out), "more": more})

    return call(f"jobs of {project}", fetch)


def _of_pipeline(**options: Any) -> dict[str, Any]:
    """The arguments of a tool on one pipeline: the project, the pipeline id and these optional ones."""
    return {"type": "object", "additionalProperties": False, "required": ["project", "pipeline_id"],
            "properties": {"project": _PROJECT, "pipeline_id": {"type": "integer", "minimum": 1}, **options}}


TOOL_DEFS = (
    ToolDef("gitlab_list_pipelines", "Pipelines of a commit (sha) or a branch (ref), newest first: id, sha, ref, "
            "status, source, web_url. updated_after takes an ISO 8601 time.",
            {"type": "object", "additionalProperties": False, "required": ["project"], "properties": {
                "project": _PROJECT,
                "sha": {"type": "string", "pattern": "^[0-9a-f]{7,64}$"},
                "ref": {"type": "string", "minLength": 1, "maxLength": 255},
                "updated_after": {"type": "string", "maxLength": 40},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100}}},
            list_pipelines),
    ToolDef("gitlab_get_pipeline_jobs", "Every job of a pipeline, retried attempts included (a job name that "
            "appears twice was retried; the later id is the retry): name, stage, status, failure_reason, "
            "allow_failure, web_url. scope lists only jobs in one state (e.g. failed); a list longer than max_jobs "
            "is cut (its oldest attempts) and marked truncated.",
            _of_pipeline(include_retried={"type": "boolean"},
                         scope={"type": "string", "enum": ["failed", "success", "canceled", "skipped", "manual"]},
                         max_jobs={"type": "integer", "minimum": 1, "maximum": budgets.TRIAGE_MAX_JOBS_PER_PIPELINE}),
            get_pipeline_jobs),
    ToolDef("gitlab_get_pipeline_bridges", "Every trigger job (bridge) of a pipeline, oldest first, with the pipeline "
            "it started: downstream_pipeline {id, project_id, sha, ref, status, source (parent_pipeline: a child "
            "pipeline of this project; pipeline: another project's), web_url}, or null when it started none. A "
            "child's jobs are read with gitlab_get_pipeline_jobs on downstream_pipeline.id (in project_id). A list "
            "longer than max_bridges is cut (its oldest bridges) and marked truncated.",
            _of_pipeline(max_bridges={"type": "integer", "minimum": 1,
                                      "maximum": budgets.TRIAGE_MAX_BRIDGES_PER_PIPELINE}),
            get_pipeline_bridges),
    ToolDef("gitlab_list_project_jobs", "The project's newest jobs across all its pipelines, retried attempts "
            "included, newest first (one page of per_page): name, stage, status, failure_reason, allow_failure, "
            "web_url, pipeline_id and pipeline_created_at. Marked truncated when older jobs exist beyond the page.",
            {"type": "object", "additionalProperties": False, "required": ["project"], "properties": {
                "project": _PROJECT, "per_page": {"type": "integer", "minimum": 1, "maximum": 100}}},
            list_project_jobs),
    ToolDef("gitlab_get_pipeline_test_report", "The pipeline's unit test report (junit artifacts; one suite per job, "
            "a parallel job's shards `name 1/3` share the suite `name`, only each job's latest attempt): per suite its "
            "counts and cases (status success/failed/skipped/error, classname, name, file, the start of the stack "
            "trace). suites keeps only these suites, statuses only cases in these states (e.g. [\"failed\", "
            "\"error\"]); at most max_cases cases and a bounded number of bytes are read, and `cut` says why a "
            "report is not whole.",
            _of_pipeline(suites={"type": "array", "maxItems": 200,
                                 "items": {"type": "string", "minLength": 1, "maxLength": 255}},
                         statuses={"type": "array", "items": {"type": "string",
                                                              "enum": ["success", "failed", "skipped", "error"]}},
                         max_cases={"type": "integer", "minimum": 1, "maximum": budgets.TRIAGE_REPORT_MAX_CASES},
                         max_bytes={"type": "integer", "minimum": 1024, "maximum": budgets.TRIAGE_REPORT_MAX_BYTES}),
            get_pipeline_test_report),
    ToolDef("gitlab_get_pipeline_test_report_summary", "Counts of the pipeline's unit test report, in total and per "
            "suite (total, success, failed, skipped, error; the job ids that made each suite).",
            _of_pipeline(), get_pipeline_test_report_summary),
)
