"""Whether two job logs show the same failure: the fingerprint, the lines each log ends with, and for a failure too
generic to name (or a hang) the whole log, numbers and ids aside. Pure functions."""

from __future__ import annotations

import re

from hummingbird_agent import budgets
from hummingbird_agent.logs.runner_text import is_runner_line
from hummingbird_agent.logs.signature import signature
from hummingbird_agent.triage.excerpt import LogEvidence

# A quoted source line or the marker under it: a line number or an indent, a gutter bar, then code or carets (a
# table row starting at the margin with `|` is not one).
_SOURCE_CONTEXT = re.compile(r"(?:\s*\d+\s+|\s+)\|(?:\s|$)")


def same_failure(mine: LogEvidence, other: LogEvidence, hung: bool = False) -> bool:
    """Whether `other` failed as `mine` did: its log shows this fingerprint and every line this log ends with. A
    failure too generic to name, or a hang (its log shows where it stopped, not why), only when both whole logs are
    the same, numbers and ids aside (`LogDigest`)."""
    if mine.fingerprint.generic or hung:
        return (mine.digest_lines >= budgets.TRIAGE_SAME_LOG_MIN_LINES and mine.digest == other.digest
                and not (mine.cut or other.cut))
    return mine.fingerprint.covered_by(other.fingerprint) and closing_shown(mine.tail, other.tail)


def _ending(tail: str) -> list[str]:
    """The signatures of the lines a log ends with, less the source context compilers and linters quote under a
    diagnostic (`  12 | code`, `     |     ^^^`): that moves with the file, the diagnostic does not; and less GitLab
    Runner's own lines (another runner, ref or commit: not what the job did)."""
    lines = [line for line in tail.splitlines()
             if line.strip() and not _SOURCE_CONTEXT.match(line) and not is_runner_line(line)]
    return [signature(line) for line in lines[-budgets.TRIAGE_CLOSING_LINES:]]


def closing_shown(mine: str, other: str) -> bool:
    """Whether every line the MR's log ends with (where runners and builds say what failed) is printed in the
    other log's last lines too, volatile parts masked: a line the base never printed there is something the MR's run
    did that the base's did not, whatever words it uses ("Please rebuild the assets", "Dubious, test returned 1")."""
    theirs = {signature(line) for line in other.splitlines()}
    return all(line in theirs for line in _ending(mine))
