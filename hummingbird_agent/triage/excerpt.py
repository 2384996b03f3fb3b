"""A job log's failure as the triage compares it: the excerpt, the fingerprint from the whole log, its last lines
and the runner's own verdict line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hummingbird_agent import budgets
from hummingbird_agent.logs import clean_line, excerpt_lines
from hummingbird_agent.logs.digest import LogDigest
from hummingbird_agent.logs.fingerprint import Fingerprint, Survey, fingerprint, strong_lines, survey
from hummingbird_agent.logs.signature import signature
from hummingbird_agent.logs.tail import LogTail

# The runner's own verdict line ("ERROR: Job failed (system failure): ...", "ERROR: Job failed: exit code 1").
_RUNNER_FAILED = re.compile(r"\s*ERROR: Job failed\b")


@dataclass(frozen=True, slots=True)
class LogEvidence:
    """A job log's failure excerpt and fingerprint."""

    excerpt: tuple[str, ...]
    fingerprint: Fingerprint
    tail: str = ""
    """The log's last lines (`LogTail`): what the knowledge base compares whole logs by."""
    cut: bool = False
    """Only the log's head was read (a byte budget): what follows may hold another failure."""
    first_line: str = ""
    """The first failure line of the fingerprint as the log printed it."""
    runner_line: str = ""
    """The runner's own last `ERROR: Job failed ...` line (what a platform failure says)."""
    digest: str = ""
    """The whole log's `LogDigest`: equal digests, the same lines in the same order, numbers and ids aside."""
    digest_lines: int = 0
    """Non-blank lines the digest covers."""

    @property
    def last_lines(self) -> tuple[str, ...]:
        """The log's last non-blank lines (an infrastructure failure's excerpt: the runner's end, not the job's)."""
        lines = [line for line in self.tail.splitlines() if line.strip()]
        return tuple(lines[-budgets.TRIAGE_EXCERPT_LINES:])


def evidence_of(failing: Path, passing: Path | None) -> LogEvidence:
    """Blocking: the fingerprint from the log alone (its excerpt, and its failure lines, failing tests and
    diagnostics anywhere), the shown excerpt against the passing log when given."""
    alone = tuple(line for _, line in excerpt_lines(failing, max_lines=budgets.TRIAGE_EXCERPT_LINES).lines)
    shown = alone if passing is None else tuple(
        line for _, line in excerpt_lines(failing, passing=passing, max_lines=budgets.TRIAGE_EXCERPT_LINES).lines)
    tail, digest = LogTail(), LogDigest()
    whole = _anywhere(failing, tail, digest)
    found = fingerprint(alone, whole)
    first = _first_line(alone, found)
    text = tail.text()
    # The runner colours its line (`\x1b[31;1mERROR: Job failed ...`): matched as a terminal shows it.
    painted = (clean_line(line) for line in reversed(text.splitlines()))
    runner = next((line.strip() for line in painted if _RUNNER_FAILED.match(line)), "")
    return LogEvidence(shown, found, text, first_line=first, runner_line=runner, digest=digest.hexdigest(),
                       digest_lines=digest.lines)


def _first_line(excerpt: tuple[str, ...], found: Fingerprint) -> str:
    """The excerpt line that says what failed, as printed: the first fingerprint line stating a failure (not a bare
    test header such as pytest's `___ test_x ___`), else the first fingerprint line."""
    named = set(found.lines)
    stating = next((raw.strip() for name, raw in strong_lines(excerpt) if name in named), "")
    return stating or next((line.strip() for line in excerpt if named and signature(line) == found.lines[0]), "")


def _anywhere(path: Path, tail: LogTail, digest: LogDigest) -> Survey:
    """The survey of the whole log (its specific failure lines, failing tests and diagnostics); every line
    goes to `tail`."""
    def lines() -> Iterator[str]:
        with path.open("rb") as handle:
            for raw in handle:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                tail.add(line)
                digest.add(line)
                yield line[: budgets.EXCERPT_MAX_LINE_CHARS]

    return survey(lines())
