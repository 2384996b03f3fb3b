"""A project's CI history in the fake GitLab, for the triage's tests and its benchmark: MRs with a merge base,
pipelines of commits and branches, job attempts with their logs."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.servers.gitlab import GitLabServer


@dataclass(frozen=True)
class Case:
    """A test case of a job's junit report, as GitLab's `test_report` lists it."""

    name: str
    status: str = "failed"
    classname: str = "tests.test_core"
    stack_trace: str | None = None
    file: str | None = "tests/test_core.py"

    def entry(self) -> dict[str, Any]:
        trace = self.stack_trace if self.stack_trace is not None or self.status not in ("failed", "error") else (
            f"AssertionError: {self.name} failed\n  at {self.file}:42")
        return {"status": self.status, "name": self.name, "classname": self.classname, "file": self.file,
                "stack_trace": trace}


@dataclass(frozen=True)
class Attempt:
    """One run of a job: `trace` None is an erased log; `cases` its uploaded junit report (None: none uploaded)."""

    name: str
    status: str = "failed"
    trace: str | bytes | None = ""
    failure_reason: str | None = None
    allow_failure: bool = False
    stage: str = "test"
    cases: tuple[Case, ...] | None = None


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

    def pipeline(self, sha: str, attempts: Sequence[Attempt], *, ref: str | None = None,
                 source: str = "push", updated_at: str | None = None, pipeline_id: int | None = None) -> int:
        """A finished pipeline of `sha` on `ref` (the target branch by default) with these job attempts in order."""
        pipeline_id = pipeline_id or next(self._ids)
        ref = ref or self.branch
        failed = any(a.status == "failed" and not a.allow_failure for a in _latest(attempts))
        self.gl.add_pipeline(self.project_id, pipeline_id, sha=sha, ref=ref, source=source,
                             status="failed" if failed else "success", updated_at=updated_at)
        for attempt in attempts:
            job_id = next(self._ids)
            extra: dict[str, Any] = {"allow_failure": attempt.allow_failure}
            if attempt.status == "failed":
                extra["failure_reason"] = attempt.failure_reason or "script_failure"
            self.gl.add_job(self.project_id, job_id, name=attempt.name, status=attempt.status, stage=attempt.stage,
                            ref=ref, sha=sha, pipeline_id=pipeline_id, trace=attempt.trace, **extra)
            if attempt.cases is not None:
                self.gl.add_test_cases(self.project_id, job_id, [c.entry() for c in attempt.cases])
            self.gl.add_commit_status(self.project_id, sha, attempt.name, attempt.status, stage=attempt.stage,
                                      ref=ref, id=job_id, allow_failure=attempt.allow_failure,
                                      target_url=f"{self.gl.projects[self.project_id]['web_url']}/-/jobs/{job_id}")
        return pipeline_id


def _latest(attempts: Sequence[Attempt]) -> list[Attempt]:
    latest: dict[str, Attempt] = {}
    for attempt in attempts:
        latest[attempt.name] = attempt
    return list(latest.values())
