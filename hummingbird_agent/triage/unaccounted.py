"""What a job's log reports beyond its failed test cases: the failure lines, failing tests and diagnostics that
name none of the cases and appear in none of their traces. A test report only adds evidence: what it does not
account for must be found in the nearest failed run's log too before the job is someone else's. Pure functions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hummingbird_agent.logs.fingerprint import Fingerprint
from hummingbird_agent.triage.cases import Suite

# A case name shorter than this is not looked for in log lines ("a", "t1" name half the log).
_MIN_NAME_CHARS = 4


@dataclass(frozen=True, slots=True)
class Rest:
    """The log's failures that the failed cases do not account for."""

    lines: frozenset[str] = frozenset()
    tests: frozenset[str] = frozenset()
    diagnostics: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not (self.lines or self.tests or self.diagnostics)

    @property
    def first(self) -> str:
        return min(self.lines | self.tests | self.diagnostics, default="")

    def beyond(self, other: Fingerprint) -> Rest:
        """Those of these failures another run's log does not report."""
        return Rest(self.lines - other.anywhere - set(other.lines), self.tests - {k for k, _ in other.tests},
                    self.diagnostics - {k for k, _ in other.diagnostics})


def unaccounted(found: Fingerprint, suite: Suite) -> Rest:
    """The failures `found` (a log's fingerprint) reports that `suite`'s failed cases do not: lines naming no
    failed case and printed in none of their traces."""
    names = [n for _, name in suite.failed for n in (name, name.split("[")[0]) if len(n) >= _MIN_NAME_CHARS]
    traces = suite.traces

    def accounted(key: str) -> bool:
        return any(n in key for n in names) or key in traces or any(key in t for t in traces)

    return Rest(frozenset(k for k in _all(found.anywhere, found.lines) if not accounted(k)),
                frozenset(k for k, _ in found.tests if not accounted(k)),
                frozenset(k for k, _ in found.diagnostics if not accounted(k.split(" ", 1)[-1])))


def _all(*groups: Iterable[str]) -> set[str]:
    return {line for group in groups for line in group}

