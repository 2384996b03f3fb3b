"""The fake GitLab's pipelines: listing by commit or branch, jobs with or without their retried attempts,
and commit statuses posted by a client, with GitLab's rules for them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tests.servers import samples
from tests.servers.base import HTTPError, Request

# States a client may post (POST /projects/:id/statuses/:sha); anything else is a 400 like GitLab's.
STATUS_STATES = ("pending", "running", "success", "failed", "canceled", "skipped")
# GitLab's state machine from an open (pending/running) status; finished ones are never reopened: a post
# with the same name then creates a new status (GenericCommitStatus.running_or_pending.find_or_initialize_by).
_OPEN_TRANSITIONS = {"pending": {"running", "success", "failed", "canceled", "skipped"},
                     "running": {"success", "failed", "canceled"}}
# Job states a `scope[]` filter of a job list may name (anything else is GitLab's 400).
# A test case's states in GitLab's reports (Gitlab::Ci::Reports::TestCase::STATUS_TYPES).
CASE_STATUSES = ("success", "failed", "skipped", "error")
_COUNTED = {"success": "success_count", "failed": "failed_count", "skipped": "skipped_count", "error": "error_count"}
# A parallel job's shard ("rspec 2/3"): its report joins the suite of the job's group name (Ci::Build#test_suite_name).
_SHARD = re.compile(r"\s+\d+/\d+\s*$")
# The fields of a job's `pipeline` (Entities::Ci::PipelineBasic).
_PIPELINE_BASIC = ("id", "iid", "project_id", "sha", "ref", "status", "source", "created_at", "updated_at", "web_url")
_JOB_SCOPES = frozenset({"created", "pending", "running", "failed", "success", "canceled", "skipped",
                         "waiting_for_resource", "manual"})


class GitLabCIState:
    """Pipelines (id -> pipeline) per project; mixed into GitLabState, which owns jobs and statuses."""

    projects: dict[int, dict[str, Any]]
    jobs: dict[tuple[int, int], dict[str, Any]]
    statuses: dict[tuple[int, str], list[dict[str, Any]]]

    def init_ci(self) -> None:
        self.pipelines: dict[tuple[int, int], dict[str, Any]] = {}
        self.posted_statuses: list[dict[str, Any]] = []
        self.test_cases: dict[tuple[int, int], list[dict[str, Any]]] = {}

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
        found = [p for (proj, _), p in self.pipelines.items() if proj == project_id]
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
            raise HTTPError(404, "404 Not found")
        if scope and set(scope) - _JOB_SCOPES:
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
        if scope and set(scope) - _JOB_SCOPES:
            raise HTTPError(400, "scope does not have a valid value")
        jobs = [j for (p, _), j in sorted(self.jobs.items(), reverse=True) if p == project_id]
        return [self.render_job(j) for j in jobs if not scope or j["status"] in scope]

    def render_job(self, job: dict[str, Any]) -> dict[str, Any]:
        """A job as GitLab's API shows it: its `pipeline` is the pipeline as it is now (Entities::Ci::PipelineBasic)."""
        pipeline = self.pipelines.get((job["pipeline"]["project_id"], job["pipeline"]["id"]))
        if pipeline is None:
            return job
        return job | {"pipeline": {k: pipeline[k] for k in _PIPELINE_BASIC}}

    def add_test_cases(self, project_id: int, job_id: int, cases: Sequence[Mapping[str, Any]]) -> None:
        """The junit report a job uploaded: each case needs `status` and `name`; the rest defaults as GitLab shows."""
        entries = []
        for case in cases:
            if case.get("status") not in CASE_STATUSES:
                raise ValueError(f"a test case's status is one of {CASE_STATUSES}, not {case.get('status')!r}")
            entries.append({"status": case["status"], "name": case["name"], "classname": case.get("classname"),
                            "file": case.get("file"), "execution_time": case.get("execution_time", 0.1),
                            "system_output": case.get("system_output"), "stack_trace": case.get("stack_trace"),
                            "attachment_url": None, "recent_failures": None})
        self.test_cases[(project_id, job_id)] = entries

    def test_report(self, project_id: int, pipeline_id: int) -> dict[str, Any]:
        """GET /pipelines/:id/test_report: the latest attempt of each job that uploaded a report, one suite per job
        (shards of a parallel job in one); a pipeline without reports has no suites and zero counts (not a 404)."""
        suites = [self._suite(name, cases, []) for name, cases in self._suites(project_id, pipeline_id).items()]
        return {"total_time": round(sum(s["total_time"] for s in suites), 3), **_counts(suites), "test_suites": suites}

    def test_report_summary(self, project_id: int, pipeline_id: int) -> dict[str, Any]:
        suites = []
        for name, cases in self._suites(project_id, pipeline_id).items():
            suite = self._suite(name, cases, [job_id for job_id, _ in cases])
            del suite["test_cases"]
            suites.append(suite)
        counts = _counts(suites)
        total = {"time": round(sum(s["total_time"] for s in suites), 3), "count": counts["total_count"],
                 **{k: counts[f"{k}_count"] for k in CASE_STATUSES}, "suite_error": None}
        return {"total": total, "test_suites": suites}

    def _suites(self, project_id: int, pipeline_id: int) -> dict[str, list[tuple[int, dict[str, Any]]]]:
        """(job id, case) per suite name, from each job name's latest attempt (retried attempts are not reported)."""
        if (project_id, pipeline_id) not in self.pipelines:
            raise HTTPError(404, "404 Not found")
        latest: dict[str, int] = {}
        for (p, job_id), job in sorted(self.jobs.items()):
            if p == project_id and job["pipeline"]["id"] == pipeline_id:
                latest[job["name"]] = job_id
        suites: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for name, job_id in latest.items():
            for case in self.test_cases.get((project_id, job_id), []):
                suites.setdefault(_SHARD.sub("", name), []).append((job_id, case))
        return suites

    @staticmethod
    def _suite(name: str, cases: list[tuple[int, dict[str, Any]]], build_ids: list[int]) -> dict[str, Any]:
        listed = [c for _, c in cases]
        suite: dict[str, Any] = {"name": name, "total_time": round(sum(c["execution_time"] for c in listed), 3),
                                 "total_count": len(listed)}
        suite |= {key: sum(c["status"] == status for c in listed) for status, key in _COUNTED.items()}
        if build_ids:
            suite["build_ids"] = sorted(set(build_ids))
        return suite | {"suite_error": None, "test_cases": listed}

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


def _counts(suites: list[dict[str, Any]]) -> dict[str, int]:
    return {key: sum(s[key] for s in suites) for key in ("total_count", *_COUNTED.values())}


def _normalised(moment: str) -> str:
    """An ISO 8601 time in the fake's stored format (…Z, milliseconds), so strings compare in time order."""
    head = moment.replace("+00:00", "Z").rstrip("Z")
    return head[:19] + ".000Z" if len(head) >= 19 else head
