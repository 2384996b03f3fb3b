"""The fake GitLab's pipelines: listing by commit or branch, jobs with or without their retried attempts,
and commit statuses posted by a client, with GitLab's rules for them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tests.servers import gitlab_reports, samples
from tests.servers.base import HTTPError, Request
from tests.servers.gitlab_downstream import GitLabDownstreamState
from tests.servers.gitlab_reports import UNPARSABLE_JUNIT, case_entry

# GitLab's answer to an unknown record in any API endpoint (ActiveRecord::RecordNotFound, lib/api/api.rb): the
# error body then reads {"message": "404 Not found"}.
NOT_FOUND = "Not found"
# States a client may post (POST /projects/:id/statuses/:sha); anything else is a 400 like GitLab's.
STATUS_STATES = ("pending", "running", "success", "failed", "canceled", "skipped")
# GitLab's state machine from an open (pending/running) status; finished ones are never reopened: a post
# with the same name then creates a new status (GenericCommitStatus.running_or_pending.find_or_initialize_by).
_OPEN_TRANSITIONS = {"pending": {"running", "success", "failed", "canceled", "skipped"},
                     "running": {"success", "failed", "canceled"}}
# Where a pipeline came from (Enums::Ci::Pipeline.sources): a `source` filter naming anything else is GitLab's 400.
PIPELINE_SOURCES = frozenset({"unknown", "push", "web", "trigger", "schedule", "api", "external", "pipeline", "chat",
                              "webide", "merge_request_event", "external_pull_request_event", "parent_pipeline",
                              "ondemand_dast_scan", "ondemand_dast_validation", "security_orchestration_policy",
                              "container_registry_push", "duo_workflow", "pipeline_execution_policy_schedule"})
# A parallel job's shard ("rspec 2/3"): its report joins the suite of the job's group name (Ci::Build#test_suite_name).
_SHARD = re.compile(r"\s+\d+/\d+\s*$")
# Job states a `scope[]` filter of a job list may name, anything else is GitLab's 400 (CommitStatus::AVAILABLE_STATUSES,
# app/models/concerns/ci/has_status.rb; the `optional_scope` params of lib/api/ci/helpers/pipelines_helpers.rb).
JOB_STATES = frozenset({"created", "waiting_for_resource", "preparing", "waiting_for_callback", "pending", "running",
                        "success", "failed", "canceling", "canceled", "skipped", "manual", "scheduled"})


class GitLabCIState(GitLabDownstreamState):
    """Pipelines (id -> pipeline) per project; mixed into GitLabState, which owns jobs and statuses."""

    projects: dict[int, dict[str, Any]]
    jobs: dict[tuple[int, int], dict[str, Any]]
    statuses: dict[tuple[int, str], list[dict[str, Any]]]

    def init_ci(self) -> None:
        self.pipelines: dict[tuple[int, int], dict[str, Any]] = {}
        self.posted_statuses: list[dict[str, Any]] = []
        self.test_cases: dict[tuple[int, int], list[dict[str, Any]]] = {}
        self.suite_errors: dict[tuple[int, int], str] = {}
        self.bridges: dict[tuple[int, int], dict[str, Any]] = {}

    def next_id(self) -> int:
        raise NotImplementedError

    def now(self) -> str:
        raise NotImplementedError

    def add_pipeline(self, project_id: int, pipeline_id: int, *, sha: str, ref: str = "main",
                     status: str = "failed", source: str = "push", updated_at: str | None = None) -> dict[str, Any]:
        now = self.now()
        pipeline = {"id": pipeline_id, "iid": pipeline_id, "project_id": project_id, "sha": sha, "ref": ref,
                    "status": status, "source": source, "created_at": now, "updated_at": updated_at or now,
                    "web_url": f"{self.projects[project_id]['web_url']}/-/pipelines/{pipeline_id}"}
        self.pipelines[(project_id, pipeline_id)] = pipeline
        return pipeline

    def ensure_pipeline(self, project_id: int, pipeline_id: int, sha: str, ref: str) -> None:
        if (project_id, pipeline_id) not in self.pipelines:
            self.add_pipeline(project_id, pipeline_id, sha=sha, ref=ref)

    def list_pipelines(self, project_id: int, req: Request) -> list[dict[str, Any]]:
        """GET /projects/:id/pipelines as Ci::PipelinesFinder lists them (app/finders/ci/pipelines_finder.rb): child
        pipelines (source `parent_pipeline`) only when asked for by that source; unknown values are a 400."""
        for field, valid in (("status", JOB_STATES), ("source", PIPELINE_SOURCES)):
            if req.arg(field) is not None and req.arg(field) not in valid:
                raise HTTPError(400, f"{field} does not have a valid value")
        children = req.arg("source") == "parent_pipeline"
        found = [p for (proj, _), p in self.pipelines.items()
                 if proj == project_id and (children or p["source"] != "parent_pipeline")]
        for field in ("sha", "ref", "status", "source"):
            wanted = req.arg(field)
            found = [p for p in found if wanted is None or p[field] == wanted]
        if (after := req.arg("updated_after")) is not None:
            found = [p for p in found if p["updated_at"] > _normalised(after)]
        if req.arg("order_by", "id") not in ("id", "status", "ref", "updated_at", "user_id"):
            raise HTTPError(400, "order_by does not have a valid value")
        key = req.arg("order_by", "id")
        return sorted(found, key=lambda p: (p.get(key) or "", p["id"]), reverse=req.arg("sort", "desc") == "desc")

    def pipeline_jobs(self, project_id: int, pipeline_id: int, include_retried: bool,
                      scope: list[str] | None = None) -> list[dict[str, Any]]:
        """The pipeline's jobs, newest first as GitLab lists them; without include_retried, only each name's latest
        attempt (GitLab's default); `scope`: only jobs in these states (GitLab's `scope[]`)."""
        if (project_id, pipeline_id) not in self.pipelines:
            raise HTTPError(404, NOT_FOUND)
        if scope and set(scope) - JOB_STATES:
            raise HTTPError(400, "scope does not have a valid value")
        jobs = [j for (p, _), j in sorted(self.jobs.items(), reverse=True)
                if p == project_id and j["pipeline"]["id"] == pipeline_id]
        if not include_retried:
            latest: dict[str, dict[str, Any]] = {}
            for job in jobs:
                latest.setdefault(job["name"], job)
            jobs = [j for j in jobs if latest[j["name"]] is j]
        return [self.render_job(j) for j in jobs if not scope or j["status"] in scope]

    def project_jobs(self, project_id: int, scope: list[str] | None = None) -> list[dict[str, Any]]:
        """GET /projects/:id/jobs: every job of the project (`project.builds`: retried attempts included, bridges not),
        newest first (`order(id: :desc)`); `scope`: only jobs in these states (GitLab's `scope[]`)."""
        if scope and set(scope) - JOB_STATES:
            raise HTTPError(400, "scope does not have a valid value")
        jobs = [j for (p, _), j in sorted(self.jobs.items(), reverse=True) if p == project_id]
        return [self.render_job(j) for j in jobs if not scope or j["status"] in scope]

    def render_job(self, job: dict[str, Any]) -> dict[str, Any]:
        """A job as GitLab's API shows it: its `pipeline` is the pipeline as it is now (Entities::Ci::PipelineBasic)."""
        pipeline = self.pipeline_basic(job["pipeline"]["project_id"], job["pipeline"]["id"])
        return job if pipeline is None else job | {"pipeline": pipeline}

    def add_test_cases(self, project_id: int, job_id: int, cases: Sequence[Mapping[str, Any]]) -> None:
        """The junit report a job uploaded: each case needs `status` and `name`; the rest defaults as GitLab shows."""
        self.test_cases[(project_id, job_id)] = [case_entry(case) for case in cases]

    def add_suite_error(self, project_id: int, job_id: int, error: str = UNPARSABLE_JUNIT) -> None:
        """The job uploaded a junit file GitLab could not parse: its suite then lists no case and counts zero."""
        self.suite_errors[(project_id, job_id)] = error

    def test_report(self, project_id: int, pipeline_id: int) -> dict[str, Any]:
        """GET /pipelines/:id/test_report; a pipeline without reports has no suites and zero counts (not a 404)."""
        return gitlab_reports.test_report(self._uploads(project_id, pipeline_id))

    def test_report_summary(self, project_id: int, pipeline_id: int) -> dict[str, Any]:
        return gitlab_reports.test_report_summary(self._uploads(project_id, pipeline_id))

    def _uploads(self, project_id: int, pipeline_id: int) -> list[tuple[str, int, list[dict[str, Any]], str | None]]:
        """(suite, job id, cases, parse error) of each job name's latest attempt that uploaded a junit report
        (Ci::Pipeline#latest_test_report_builds: `builds.latest`, retried attempts are not reported); a parallel
        job's shards share the suite of its group name (Ci::Build#test_suite_name)."""
        if (project_id, pipeline_id) not in self.pipelines:
            raise HTTPError(404, NOT_FOUND)
        latest: dict[str, int] = {}
        for (p, job_id), job in sorted(self.jobs.items()):
            if p == project_id and job["pipeline"]["id"] == pipeline_id:
                latest[job["name"]] = job_id
        return [(_SHARD.sub("", name), job_id, self.test_cases.get((project_id, job_id), []),
                 self.suite_errors.get((project_id, job_id))) for name, job_id in latest.items()
                if (project_id, job_id) in self.test_cases or (project_id, job_id) in self.suite_errors]

    def post_status(self, project_id: int, sha: str, req: Request, author: dict[str, Any]) -> dict[str, Any]:
        state = req.arg("state")
        if state not in STATUS_STATES:
            raise HTTPError(400, "state does not have a valid value")
        name = req.arg("name") or req.arg("context") or "default"
        ref = req.arg("ref")
        open_one = next((s for s in reversed(self.statuses.get((project_id, sha), []))
                         if s["name"] == name and s.get("ref") == ref and s["status"] in _OPEN_TRANSITIONS), None)
        if open_one is not None:
            if state not in _OPEN_TRANSITIONS[open_one["status"]]:
                raise HTTPError(400, f"Cannot transition status from {open_one['status']} to {state}")
            # GitLab moves the open status to the new state and takes the new target_url, description and coverage
            # when given (Ci::CreateCommitStatusService: `optional_attributes`, assigned before the transition).
            given = {k: req.arg(k) for k in ("target_url", "description", "coverage") if req.arg(k) is not None}
            open_one.update(status=state, finished_at=self.now(), **given)
            return open_one
        entry = samples.load("gitlab/api/commit_status_post_response.json")
        entry.update(id=self.next_id(), sha=sha, name=name, status=state, ref=ref, author=author,
                     target_url=req.arg("target_url"), description=req.arg("description"), created_at=self.now(),
                     coverage=None, allow_failure=False)
        self.statuses.setdefault((project_id, sha), []).append(entry)
        self.posted_statuses.append(entry)
        return entry


def _normalised(moment: str) -> str:
    """An ISO 8601 time in the fake's stored format (…Z, milliseconds), so strings compare in time order."""
    head = moment.replace("+00:00", "Z").rstrip("Z")
    return head[:19] + ".000Z" if len(head) >= 19 else head
