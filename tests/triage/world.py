"""A project's CI history in the fake GitLab, for the triage's tests and its benchmark: MRs with a merge base,
pipelines of commits and branches, job attempts with their logs."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.servers.gitlab import GitLabServer
from tests.servers.gitlab_downstream import composite_status


@dataclass(frozen=True)
class Case:
    """A test case of a job's junit report, as GitLab's `test_report` lists it."""

    name: str
    status: str = "failed"
    classname: str = "tests.test_core"
    stack_trace: str | None = None
    file: str | None = "tests/test_core.py"
    execution_time: float = 0.1

    def entry(self) -> dict[str, Any]:
        trace = self.stack_trace if self.stack_trace is not None or self.status not in ("failed", "error") else (
            f"AssertionError: {self.name} failed\n  at {self.file}:42")
        return {"status": self.status, "name": self.name, "classname": self.classname, "file": self.file,
                "stack_trace": trace, "execution_time": self.execution_time}


@dataclass(frozen=True)
class Attempt:
    """One run of a job in any of GitLab's job states (`skipped`: not run because an earlier stage failed); `trace`
    None is an erased log; `cases` its uploaded junit report (None: none uploaded); `suite_error` a junit file GitLab
    could not parse (its suite then lists no case)."""

    name: str
    status: str = "failed"
    trace: str | bytes | None = ""
    failure_reason: str | None = None
    allow_failure: bool = False
    stage: str = "test"
    cases: tuple[Case, ...] | None = None
    suite_error: str | None = None


def sha_of(*parts: object) -> str:
    return hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()


class CiWorld:
    def __init__(self, gl: GitLabServer, project_id: int = 1, path: str = "group/project", branch: str = "main",
                 first_id: int = 1000) -> None:
        self.gl, self.project_id, self.path, self.branch = gl, project_id, path, branch
        if project_id not in gl.projects:
            gl.add_project(project_id, path, default_branch=branch)
        self._ids = itertools.count(first_id)

    def mr(self, iid: int, *, base_sha: str, sha: str | None = None, author_id: int = 2,
           **overrides: Any) -> dict[str, Any]:
        sha = sha or sha_of(self.path, "mr", iid)
        return self.gl.add_mr(self.project_id, iid, sha=sha, target_branch=self.branch, author_id=author_id,
                              diff_refs={"base_sha": base_sha, "head_sha": sha, "start_sha": base_sha}, **overrides)

    def push_mr(self, iid: int, sha: str, *, base_sha: str) -> str:
        """A push to MR !iid's branch: `sha`, built on `base_sha`, is its head now (a new version of the MR)."""
        self.gl.push_mr(self.project_id, iid, sha=sha, base_sha=base_sha)
        return sha

    def merged(self, iid: int, commits: Sequence[str], *, merge_sha: str | None = None, **overrides: Any,
               ) -> dict[str, Any]:
        """A merged MR into the target branch whose diff had these commits, merged as `merge_sha` (a merge commit of
        the target branch): what GitLab finds for any of them (GET /repository/commits/:sha/merge_requests)."""
        merge_sha = merge_sha or sha_of(self.path, "merge", iid)
        mr = self.mr(iid, base_sha=sha_of(self.path, "base", iid), sha=commits[-1], state="merged",
                     merged_at=self.gl.now(), merge_commit_sha=merge_sha, **overrides)
        self.gl.add_mr_commits(self.project_id, iid, list(commits))
        author = self.gl.users[int(mr["author"]["id"])]["name"]
        for n, sha in enumerate(commits):
            self.gl.add_branch_commit(self.project_id, sha, title=f"Part {n + 1} of !{iid}", author_name=author)
        self.gl.add_branch_commit(self.project_id, merge_sha, title=f"Merge branch of !{iid}", author_name=author)
        return mr

    def push(self, sha: str, author_name: str = "Dev") -> str:
        """A commit pushed to the target branch without a merge request."""
        self.gl.add_branch_commit(self.project_id, sha, title="Direct push", author_name=author_name)
        return sha

    def pipeline(self, sha: str, attempts: Sequence[Attempt], *, ref: str | None = None,
                 source: str = "push", updated_at: str | None = None, pipeline_id: int | None = None) -> int:
        """A pipeline of `sha` on `ref` (the target branch by default) with these job attempts in order; its status
        comes from each job's latest attempt as GitLab computes it (all passed or finished: success or failed)."""
        pipeline_id = pipeline_id or next(self._ids)
        status = composite_status((a.status, a.allow_failure) for a in _latest(attempts))
        self.gl.add_pipeline(self.project_id, pipeline_id, sha=sha, ref=ref or self.branch, source=source,
                             status=status or "success", updated_at=updated_at)
        for attempt in attempts:
            self._job(pipeline_id, attempt)
        return pipeline_id

    def retry(self, pipeline_id: int, attempt: Attempt) -> int:
        """A new attempt of a job in an existing pipeline, after the fact (a retry once a verdict was given): the
        earlier attempt of that name becomes a retried one, as Ci::RetryJobService marks it, and the pipeline's
        status is recomputed from the latest attempts. Returns the new job's id."""
        job_id = self._job(pipeline_id, attempt)
        self.gl.refresh_status(self.project_id, pipeline_id)
        return job_id

    def trigger(self, pipeline_id: int, name: str, attempts: Sequence[Attempt], *, downstream: CiWorld | None = None,
                status: str | None = None, stage: str = "trigger", allow_failure: bool = False) -> int:
        """A trigger job `name` in an existing pipeline and the pipeline it started with these job attempts: a child
        pipeline of this project (source `parent_pipeline`, the parent's sha and ref) or, with `downstream`, a
        pipeline of that world's project on its branch (source `pipeline`). The bridge mirrors its downstream
        pipeline's status (`strategy: depend`) unless `status` is given; the parent's status is recomputed.
        Returns the downstream pipeline's id."""
        parent = self.gl.pipelines[(self.project_id, pipeline_id)]
        bridge_id = next(self._ids)
        if downstream is None:
            target = (self.project_id, self.pipeline(parent["sha"], attempts, ref=parent["ref"],
                                                     source="parent_pipeline"))
        else:
            target = (downstream.project_id, downstream.pipeline(sha_of(downstream.path, "downstream", bridge_id),
                                                                 attempts, source="pipeline"))
        shown = status or self.gl.pipelines[target]["status"]
        self.gl.add_bridge(self.project_id, bridge_id, pipeline_id=pipeline_id, name=name, status=shown,
                           downstream=target, stage=stage, allow_failure=allow_failure)
        # A bridge is a commit status of its pipeline's sha too; it has no job page to link.
        self.gl.add_commit_status(self.project_id, parent["sha"], name, shown, stage=stage, ref=parent["ref"],
                                  id=bridge_id, allow_failure=allow_failure, target_url=None)
        self.gl.refresh_status(self.project_id, pipeline_id)
        return target[1]

    def external_status(self, sha: str, other: CiWorld, attempt: Attempt, *, ref: str | None = None) -> int:
        """A commit status of `sha` in this project whose target_url is a job of `other`'s project (posted by a
        pipeline there, as a multi-project setup reports back); the job runs in a pipeline of `other`. Returns the
        job's id (in `other`'s project)."""
        pipeline_id = other.pipeline(sha_of(other.path, "reports", sha), [attempt])
        job_id = max(j for (p, j), job in self.gl.jobs.items()
                     if p == other.project_id and job["pipeline"]["id"] == pipeline_id)
        self.gl.add_commit_status(self.project_id, sha, attempt.name, attempt.status, stage=attempt.stage,
                                  ref=ref or self.branch, allow_failure=attempt.allow_failure,
                                  target_url=self.gl.jobs[(other.project_id, job_id)]["web_url"])
        return job_id

    def _job(self, pipeline_id: int, attempt: Attempt) -> int:
        """One attempt as a job of the pipeline, with its junit report and its commit status."""
        pipeline = self.gl.pipelines[(self.project_id, pipeline_id)]
        sha, ref, job_id = pipeline["sha"], pipeline["ref"], next(self._ids)
        extra: dict[str, Any] = {"allow_failure": attempt.allow_failure}
        if attempt.status == "failed":
            extra["failure_reason"] = attempt.failure_reason or "script_failure"
        self.gl.add_job(self.project_id, job_id, name=attempt.name, status=attempt.status, stage=attempt.stage,
                        ref=ref, sha=sha, pipeline_id=pipeline_id, trace=attempt.trace, **extra)
        if attempt.cases is not None:
            self.gl.add_test_cases(self.project_id, job_id, [c.entry() for c in attempt.cases])
        if attempt.suite_error is not None:
            self.gl.add_suite_error(self.project_id, job_id, attempt.suite_error)
        self.gl.add_commit_status(self.project_id, sha, attempt.name, attempt.status, stage=attempt.stage,
                                  ref=ref, id=job_id, allow_failure=attempt.allow_failure,
                                  target_url=f"{self.gl.projects[self.project_id]['web_url']}/-/jobs/{job_id}")
        return job_id


def _latest(attempts: Sequence[Attempt]) -> list[Attempt]:
    latest: dict[str, Attempt] = {}
    for attempt in attempts:
        latest[attempt.name] = attempt
    return list(latest.values())
