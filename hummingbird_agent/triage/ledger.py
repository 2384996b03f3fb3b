"""The ledger of a commit: every job of every current pipeline of the commit and every other commit status, each
one a pass, a failure to classify, something still running, or something the triage cannot prove (a job that did
not run, a state it does not model). `success` needs every item accounted for. Pure functions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hummingbird_agent.triage.model import CheckResult, Verdict

Job = Mapping[str, Any]
# Job and status states of work not finished yet (GitLab's `Ci::HasStatus::ACTIVE_STATUSES` and the states before).
RUNNING = frozenset({"created", "waiting_for_resource", "preparing", "pending", "running", "scheduled", "canceling"})
# What a job in each state that is neither a pass nor a failure says about the MR: nothing is proven by it.
_NOT_RUN = {
    "skipped": "skipped: it did not run (an earlier stage failed or a rule held it back), so it proves nothing",
    "canceled": "canceled before it finished: what it would have shown is not known",
    "manual": "a manual job the pipeline needs was not run",
}


@dataclass(frozen=True, slots=True)
class FailedJob:
    """A failed job of a current pipeline: its attempts there (oldest first) and the name it is shown by."""

    pipeline: Mapping[str, Any]
    name: str
    attempts: tuple[Job, ...]
    label: str
    nested: bool = False
    """A job of a child pipeline: compared with the jobs of the merge base's child pipelines."""


@dataclass(slots=True)
class Ledger:
    """What one triage found listed for the commit, before any failure is classified."""

    failed: list[FailedJob] = field(default_factory=list)
    unproven: list[CheckResult] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    passed: int = 0
    optional: int = 0
    external: list[Mapping[str, Any]] = field(default_factory=list)
    """Failed external statuses (not a job or bridge of a pipeline the triage read)."""

    def add_pipeline(self, pipeline: Mapping[str, Any], jobs: Mapping[str, Sequence[Job]], label: str = "") -> None:
        """Each job of a current pipeline (`jobs`: attempts by name, oldest first); `label` names the pipeline in
        the rows when it is not the analysed one."""
        for name, attempts in jobs.items():
            self._job(pipeline, name, attempts, f"{name} ({label})" if label else name)

        if pipeline.get("status") in RUNNING:
            self.running.append(f"pipeline {pipeline.get('id')}")

    def _job(self, pipeline: Mapping[str, Any], name: str, attempts: Sequence[Job], label: str) -> None:
        state = _state(attempts)
        latest = attempts[-1]
        if state == "success":
            self.passed += 1
        elif state == "failed":
            nested = pipeline.get("source") == "parent_pipeline"
            self.failed.append(FailedJob(pipeline, name, tuple(attempts), label, nested))
        elif state in RUNNING:
            self.running.append(f"job {label}")
        elif state == "allowed" or (state in ("manual", "skipped") and _optional(latest, pipeline)):
            self.optional += 1
        else:
            url, stage = str(latest.get("web_url") or ""), str(latest.get("stage") or "")
            self.unproven.append(not_run(label, state, url, stage))

    def add_statuses(self, statuses: Iterable[Mapping[str, Any]], known_ids: set[int], ignore: frozenset[str],
                     unlisted: str = "") -> None:
        """The commit's statuses that are not a job or a bridge the triage listed (`known_ids`), latest per name;
        `unlisted`: why the commit's lists are not whole (a failed status may then be a job not listed)."""
        for status in _latest(_others(statuses, known_ids, ignore)).values():
            state, name = str(status.get("status") or ""), str(status.get("name"))
            if state == "success" or (state == "failed" and status.get("allow_failure")):
                self.passed += state == "success"
                self.optional += state != "success"
            elif state == "failed" and unlisted:
                url = str(status.get("target_url") or "")
                self.unproven.append(CheckResult(name, Verdict.UNCLASSIFIED, f"not examined: {unlisted}", url=url))
            elif state == "failed":
                self.external.append(status)
            elif state in RUNNING:
                self.running.append(f"status {name}")
            else:
                self.unproven.append(not_run(name, state, str(status.get("target_url") or ""), ""))


def _state(attempts: Sequence[Job]) -> str:
    """The job's state for the ledger: its latest attempt's, "failed" when an attempt failed and no retry runs (the
    row shows what the failure was, and a retry that passed makes it flaky), "allowed" for a failure allowed."""
    state = str(attempts[-1].get("status") or "")
    failed = any(a.get("status") == "failed" and not a.get("allow_failure") for a in attempts)
    if failed and state not in RUNNING:
        return "failed"
    return "allowed" if state == "failed" else state


def _optional(job: Job, pipeline: Mapping[str, Any]) -> bool:
    """A manual job that may be left unrun, or a job skipped in a pipeline that passed (`when: on_failure`)."""
    if job.get("status") == "manual":
        return bool(job.get("allow_failure"))
    return pipeline.get("status") == "success"


def not_run(name: str, state: str, url: str, stage: str) -> CheckResult:
    reason = _NOT_RUN.get(state, f"in state `{state}`, which the triage does not know: it proves nothing")
    return CheckResult(name, Verdict.UNCLASSIFIED, reason, url=url, stage=stage)


def _others(statuses: Iterable[Mapping[str, Any]], known_ids: set[int], ignore: frozenset[str],
            ) -> list[Mapping[str, Any]]:
    """The statuses that are no listed job, left out before the latest of each name is taken: a job's status newer
    than an external one of its name must not hide the external one."""
    return [s for s in statuses if int(s.get("id") or 0) not in known_ids and str(s.get("name")) not in ignore]


def _latest(statuses: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    latest: dict[str, Mapping[str, Any]] = {}
    for status in sorted(statuses, key=lambda s: int(s.get("id") or 0)):
        latest[str(status.get("name"))] = status
    return latest


def current(pipelines: Sequence[Mapping[str, Any]], analysed: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The commit's pipelines that say what it is now: the analysed one, and the newest of each ref and source (an
    older one of the same kind was re-run); child pipelines (`parent_pipeline`) are all kept: which parent started
    each is not known from the list."""
    newest: dict[tuple[str, str], Mapping[str, Any]] = {}
    kept: list[Mapping[str, Any]] = [analysed]
    for pipeline in sorted(pipelines, key=lambda p: -int(p.get("id") or 0)):
        if pipeline.get("id") == analysed.get("id"):
            continue
        group = (str(pipeline.get("ref")), str(pipeline.get("source")))
        if pipeline.get("source") == "parent_pipeline":
            kept.append(pipeline)
        elif group not in newest:
            newest[group] = pipeline
    mine = (str(analysed.get("ref")), str(analysed.get("source")))
    return kept + [p for g, p in newest.items() if g != mine or int(p.get("id") or 0) > int(analysed.get("id") or 0)]
