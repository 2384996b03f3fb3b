"""The fake GitLab's trigger jobs (bridges) and the pipelines they start, a child pipeline of the same project or
another project's downstream one; and a pipeline's status computed from its jobs as GitLab computes it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.servers import samples

# The fields of a pipeline embedded in a job or a bridge (Entities::Ci::PipelineBasic).
PIPELINE_BASIC = ("id", "iid", "project_id", "sha", "ref", "status", "source", "created_at", "updated_at", "web_url")
# Fields of Entities::Ci::Job that its parent JobBasic, and so a bridge (lib/api/entities/ci/bridge.rb), lacks.
_JOB_ONLY = ("artifacts", "artifacts_file", "artifacts_expire_at", "tag_list", "runner", "runner_manager", "archived")
# An allowed failure counts as a success with warnings, an allowed manual job is ignored (Ci::HasStatus).
_PASSED_WITH_WARNINGS = frozenset({"failed", "canceled"})
_IGNORED = frozenset({"manual"})
# Statuses of jobs that have not started: GitLab shows them without start, end or duration.
UNSTARTED = frozenset({"created", "waiting_for_resource", "preparing", "pending", "manual", "scheduled", "skipped"})


def composite_status(jobs: Iterable[tuple[str, bool]]) -> str | None:
    """The status of a pipeline (or stage) from its latest jobs' (status, allow_failure), in the order of
    Gitlab::Ci::Status::Composite#status (lib/gitlab/ci/status/composite.rb); None without jobs."""
    found = {("success_with_warnings" if allowed and status in _PASSED_WITH_WARNINGS else
              "ignored" if allowed and status in _IGNORED else status) for status, allowed in jobs}
    if not found:
        return None
    only = [("skipped", {"skipped", "ignored"}),
            ("success", {"success", "skipped", "success_with_warnings", "ignored"}),
            ("created", {"created", "success_with_warnings", "ignored"}),
            ("preparing", {"preparing", "success_with_warnings", "ignored"}),
            ("canceled", {"canceled", "success", "skipped", "success_with_warnings", "ignored"}),
            ("pending", {"pending", "created", "skipped", "success_with_warnings", "ignored"})]
    for status, allowed in only:
        if found <= allowed:
            return status
    anyof = [("running", {"running", "pending"}), ("waiting_for_resource", {"waiting_for_resource"}),
             ("manual", {"manual"}), ("scheduled", {"scheduled"}), ("preparing", {"preparing"}),
             ("running", {"created"})]
    return next((status for status, names in anyof if found & names), "failed")


class GitLabDownstreamState:
    """Bridges per (project, id), sharing the jobs' ids as GitLab's ci_builds table does; mixed into the CI state."""

    projects: dict[int, dict[str, Any]]
    jobs: dict[tuple[int, int], dict[str, Any]]
    pipelines: dict[tuple[int, int], dict[str, Any]]
    bridges: dict[tuple[int, int], dict[str, Any]]

    def now(self) -> str:
        raise NotImplementedError

    def pipeline_basic(self, project_id: int, pipeline_id: int) -> dict[str, Any] | None:
        """The pipeline as it is now, as a job or a bridge embeds it; None for a pipeline the fake does not hold."""
        pipeline = self.pipelines.get((project_id, pipeline_id))
        return None if pipeline is None else {k: pipeline[k] for k in PIPELINE_BASIC}

    def add_bridge(self, project_id: int, bridge_id: int, *, pipeline_id: int, name: str, status: str,
                   downstream: tuple[int, int] | None, stage: str = "trigger", allow_failure: bool = False,
                   ) -> dict[str, Any]:
        """A trigger job of an existing pipeline; `downstream` is the (project id, pipeline id) it started (None:
        it started none, such as a bridge still `created` or one that failed to create its pipeline)."""
        pipeline = self.pipelines[(project_id, pipeline_id)]
        bridge = {k: v for k, v in samples.load("gitlab/api/job_single.json").items() if k not in _JOB_ONLY}
        bridge.update(id=bridge_id, name=name, status=status, stage=stage, ref=pipeline["ref"], tag=False,
                      allow_failure=allow_failure, created_at=pipeline["created_at"],
                      web_url=f"{self.projects[project_id]['web_url']}/-/jobs/{bridge_id}",
                      **({"failure_reason": "downstream_pipeline_creation_failed"} if status == "failed" else {}))
        if status in UNSTARTED:
            bridge.update(started_at=None, finished_at=None, duration=None)
        bridge["commit"].update(id=pipeline["sha"], short_id=pipeline["sha"][:8])
        bridge.update(pipeline={"id": pipeline_id, "project_id": project_id}, downstream=downstream)
        self.bridges[(project_id, bridge_id)] = bridge
        return bridge

    def render_bridge(self, bridge: dict[str, Any]) -> dict[str, Any]:
        """A bridge as GitLab's API shows it: its pipeline and its `downstream_pipeline` as they are now."""
        shown = {k: v for k, v in bridge.items() if k != "downstream"}
        parent = bridge["pipeline"]
        shown["pipeline"] = self.pipeline_basic(parent["project_id"], parent["id"])
        shown["downstream_pipeline"] = self.pipeline_basic(*bridge["downstream"]) if bridge["downstream"] else None
        return shown

    def pipeline_bridges(self, project_id: int, pipeline_id: int, scope: list[str] | None) -> list[dict[str, Any]]:
        """GET /pipelines/:id/bridges (lib/api/ci/pipelines.rb, Ci::JobsFinder with type Ci::Bridge): the latest
        attempt of each bridge, newest first; `scope`: only bridges in these states. No `include_retried` here."""
        found = [b for (p, _), b in sorted(self.bridges.items(), reverse=True)
                 if p == project_id and b["pipeline"]["id"] == pipeline_id]
        latest: dict[str, dict[str, Any]] = {}
        for bridge in found:
            latest.setdefault(bridge["name"], bridge)
        return [self.render_bridge(b) for b in found if latest[b["name"]] is b and (not scope or b["status"] in scope)]

    def refresh_status(self, project_id: int, pipeline_id: int) -> str:
        """Recompute a pipeline's status from the latest attempt of each of its jobs and bridges (GitLab does it
        whenever one of them changes) and stamp its `updated_at`."""
        latest: dict[str, dict[str, Any]] = {}
        for (p, _), job in sorted([*self.jobs.items(), *self.bridges.items()], key=lambda item: item[0]):
            if p == project_id and job["pipeline"]["id"] == pipeline_id:
                latest[job["name"]] = job
        pipeline = self.pipelines[(project_id, pipeline_id)]
        pipeline.update(status=composite_status((j["status"], bool(j["allow_failure"])) for j in latest.values())
                        or pipeline["status"], updated_at=self.now())
        return str(pipeline["status"])
