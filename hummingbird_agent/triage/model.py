"""What the triage found: a verdict per failed check with its evidence, and what it could not read."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hummingbird_agent import budgets
from hummingbird_agent.logs.fingerprint import Fingerprint


class Verdict(enum.StrEnum):
    """Most decisive first; the order is the note table's order."""

    NEW = "new"
    UNCLASSIFIED = "unclassified"
    KNOWN = "known"
    PRE_EXISTING = "pre-existing"
    FLAKY = "flaky"
    INFRASTRUCTURE = "infrastructure"


# Verdicts that say a failure is not the MR's own: the commit status passes only when every failure has one.
NOT_YOURS = frozenset({Verdict.PRE_EXISTING, Verdict.FLAKY, Verdict.INFRASTRUCTURE})


@dataclass(frozen=True, slots=True)
class TriageLimits:
    """What one triage may read (the budgets; a test or a bench may give smaller ones to reach the cut paths)."""

    max_calls: int = budgets.TRIAGE_MAX_CALLS
    max_log_bytes: int = budgets.TRIAGE_MAX_LOG_BYTES
    max_one_log_bytes: int = budgets.TRIAGE_MAX_ONE_LOG_BYTES
    max_jobs_per_pipeline: int = budgets.TRIAGE_MAX_JOBS_PER_PIPELINE
    max_checks: int = budgets.TRIAGE_MAX_CHECKS
    max_report_cases: int = budgets.TRIAGE_REPORT_MAX_CASES
    max_report_bytes: int = budgets.TRIAGE_REPORT_MAX_BYTES


@dataclass(frozen=True, slots=True)
class KnownCause:
    """A learned cause that fits the failure above the knowledge base's known-fit bar."""

    name: str
    fit: float
    resolution: str = ""
    incidents: tuple[str, ...] = ()


class KnownCauses(Protocol):
    """The knowledge base as the triage asks it: the learned cause of these failure lines, if one fits;
    `features` are the job's facts the knowledge base learns as task features (job, stage, failure_reason);
    `log_tail` the log's last lines, which it compares with the whole logs of learned incidents."""

    async def match(self, project: str, lines: Sequence[str], features: Mapping[str, str],
                    log_tail: str = "") -> KnownCause | None: ...


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One failed test case of a job's unit test report and its verdict."""

    verdict: Verdict
    key: tuple[str, str, str]
    """(suite, classname, name): a parallel job's shards share their group's suite."""
    line: str = ""
    """The first line of its stack trace or output."""
    reason: str = ""
    evidence_url: str = ""
    history: str = ""
    """How often it failed on the target branch's recent pipelines whose reports were read."""

    @property
    def suite(self) -> str:
        return self.key[0]

    @property
    def name(self) -> str:
        return self.key[2]

    @property
    def title(self) -> str:
        return f"{self.key[1]}.{self.key[2]}" if self.key[1] else self.key[2]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One failed check (a GitLab job or an external status) and why it got its verdict."""

    name: str
    verdict: Verdict
    reason: str
    """One sentence of evidence, e.g. "failed the same way on the merge base's pipeline"."""
    url: str = ""
    evidence_url: str = ""
    stage: str = ""
    failure_reason: str = ""
    excerpt: tuple[str, ...] = ()
    fingerprint: Fingerprint = field(default_factory=Fingerprint)
    known: KnownCause | None = None
    failure_line: str = ""
    """The log's first failure line as it was printed (the fingerprint, its comparison key, is normalised)."""
    cases: tuple[CaseResult, ...] = ()
    """Its failed test cases, when its pipeline's unit test report lists them (the verdict is then theirs)."""
    history: str = ""
    """How often the job failed on the target branch's recent pipelines whose job lists were read."""


@dataclass(frozen=True, slots=True)
class Triage:
    sha: str
    target_branch: str = ""
    base_sha: str = ""
    checks: tuple[CheckResult, ...] = ()
    gaps: tuple[str, ...] = ()
    omitted: int = 0
    """Failed checks beyond the budget's count, not listed."""
    unlisted: tuple[str, ...] = ()
    """Lists of the analysed commit not read whole (its jobs, its statuses): failures may hide there."""
    calls: int = 0
    log_bytes: int = 0
    report_bytes: int = 0
    running: tuple[str, ...] = ()
    """Pipelines, jobs and statuses of the commit that have not finished: nothing is decided while they run."""
    passed: int = 0
    """Checks of the commit that passed (the ledger's other items are in `checks`)."""
    optional: int = 0
    """Checks that may fail without failing the commit: allowed to fail, manual and not required."""
    snapshot: tuple[tuple[int, str, str], ...] = ()
    """(id, status, updated_at) of the commit's pipelines as read: a status is published only while they are so."""

    def counts(self) -> Counter[Verdict]:
        return Counter(c.verdict for c in self.checks)

    @property
    def all_not_yours(self) -> bool:
        """Whether every failure of the commit was examined and none is the MR's: what read nothing, or left a
        check or a list unread, is never all clear."""
        if not (self.checks or self.passed) or self.omitted or self.unlisted or self.running:
            return False
        return all(c.verdict in NOT_YOURS for c in self.checks)

    @property
    def status(self) -> str:
        """The commit status merge rules read: pending while a check of the commit runs; success only when the
        ledger is closed (every check listed, each one passed or proven not the MR's)."""
        if self.running and not self.unproven:
            return "pending"
        return "success" if self.all_not_yours else "failed"

    @property
    def unproven(self) -> tuple[CheckResult, ...]:
        """The checks that keep the commit from `success`: the MR's own failures and whatever was not proven."""
        return tuple(c for c in self.checks if c.verdict not in NOT_YOURS)

    def fingerprints(self) -> tuple[Fingerprint, ...]:
        return tuple(c.fingerprint for c in self.checks)
