"""Fingerprints of a failure: the normalised strong failure lines of its excerpt, with generic lines left out.

The knowledge base names Symptoms by the same normalisation (`signature` of the lines `strong_lines` keeps),
so a failure's fingerprint and its Symptoms agree. Two failures match when the other shows nearly all of this
one's lines; a fingerprint of generic lines only ("Job failed: exit code 1", "make: *** Error 2", a bare
timeout) never matches anything: that it failed is no evidence of why. Neither does a tool's count of its
failures ("found 3 failures"), nor a weaker line (set-up output every run prints would match unrelated
failures). A tool's diagnostic or a failing test (`findings`) is a failure line without an error word, and
each one the log reports must be reported by the other log too: coverage tolerates other noise, never a
failing test or a diagnostic the other run lacks.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from hummingbird_agent import budgets
from hummingbird_agent.logs import findings
from hummingbird_agent.logs.cues import CUE_LITERALS, cue_score
from hummingbird_agent.logs.runner_text import job_lines
from hummingbird_agent.logs.signature import signature

# cue_score's value for a diagnostic (not a summary count, an epilogue or a benign mention).
STRONG_CUE_SCORE = 3.0
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")
_PLACEHOLDERS = frozenset({"ts", "time", "date", "uuid", "tmp", "hex", "dur", "size", "pct", "n"})
# Words every tool prints around any failure: build and test drivers, runners, exit statuses, timeouts.
_GENERIC_WORDS = frozenset("""
error errors err failed failure failures fail failing fatal job jobs exit exited code codes status returned
return non zero process completed with the a an of in on at to for see above below details log logs more info
run running ran command script step task tasks execution build builds make makefile npm yarn pnpm gradle mvn
maven test tests target timeout timed out after killed terminated signal aborted abort exception elifecycle
errno this that was is has have been by from no not could be and or check full output stage
""".split())
# A line names its failure when at least this many of its words are not generic.
_MIN_SPECIFIC_WORDS = 2
# A count of failures ("HTML-Proofer found <N> failures!", "Found <N> error."): the same with one failure more.
_COUNT = re.compile(r"<N> (?:failures?|errors?|failed|failing|problems?|violations?|issues?|offen[cs]es?)\b",
                    re.IGNORECASE)
# A hedged failure word in a line that goes on with what the tool does instead ("Could not find .travis.yml, using
# standard configuration.") or that reports progress ("Starting a Gradle Daemon, 2 stopped Daemons could not be
# reused"): the tool recovered, the line states no failure unless another failure word is in it.
_HEDGE = re.compile(r"\b(?:[Cc]ould not|[Cc]ouldn't|[Cc]annot|[Cc]an't|[Uu]nable to)\b")
_RECOVERED = re.compile(
    r"[,;:(-]\s*(?:using|falling back|fall back|defaulting|will use|continuing|skipping|ignoring|trying)\b"
    r"|\.\.\.\s*using\b|^\s*(?:Starting|Using|Downloading|Looking|Loading|Trying)\b", re.IGNORECASE)
# A multiset of findings' keys: each key with its 1st, 2nd, ... occurrence, so inclusion is `<=`.
Tally = frozenset[tuple[str, int]]
# A whole log's lines are scored only when they hold one of these (the excerpt engine's filter): speed only.
_CUE_WORDS = tuple(literal.decode() for literal in CUE_LITERALS)


def strong_lines(lines: Iterable[str], min_score: float = STRONG_CUE_SCORE) -> Iterator[tuple[str, str]]:
    """(signature, line) of each line that states a failure at least as strongly as `min_score` (GitLab Runner's
    own lines never do: its `ERROR: Job failed` says that the job failed, not why)."""
    for line in job_lines(lines):
        if cue_score(line) >= min_score and states_failure(line) and (name := signature(line)):
            yield name, line


def states_failure(line: str) -> bool:
    """Whether a line's failure words state a failure, not a fallback the tool took (`_RECOVERED`)."""
    if _RECOVERED.search(line) is None or _HEDGE.search(line) is None:
        return True
    return cue_score(_HEDGE.sub(" ", line)) >= STRONG_CUE_SCORE


def is_generic(name: str) -> bool:
    """Whether a normalised line says only that something failed, not what."""
    if _COUNT.search(name) or " " not in name.strip():
        return True  # a count of failures, or a bare name (`java.lang.Exception`) with no message
    words = {w.lower() for w in _WORD.findall(name)} - _PLACEHOLDERS
    return len(words - _GENERIC_WORDS) < _MIN_SPECIFIC_WORDS


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The specific normalised failure lines of one log's excerpt (empty: nothing specific, never matches);
    every specific failure line anywhere in that log (what another failure is looked for in); the failing
    tests and diagnostics the whole log reports, and whether all of them were counted. Findings only ever
    narrow a match: a warning every run prints while it sets up is no evidence that two hangs are one."""

    lines: tuple[str, ...] = ()
    anywhere: frozenset[str] = frozenset()
    tests: Tally = frozenset()
    diagnostics: Tally = frozenset()
    complete: bool = True

    @property
    def generic(self) -> bool:
        return not self.lines

    def covered_by(self, other: Fingerprint) -> bool:
        """Whether `other`'s log reports every failing test and diagnostic of this failure and shows (nearly)
        every line of it; generic fingerprints, and ones whose findings were not all counted, never match."""
        if self.generic or not self.complete:
            return False
        if not (self.tests <= other.tests and self.diagnostics <= other.diagnostics):
            return False
        shown = other.anywhere | set(other.lines)
        if not self.anywhere <= shown:
            return False  # a failure line printed anywhere in this log and nowhere in the other: a new failure
        shared = sum(1 for line in self.lines if line in shown)
        return shared / len(self.lines) >= budgets.TRIAGE_FINGERPRINT_MIN_COVERAGE

    def short(self) -> str:
        """The first line, for a table cell or a log line."""
        return self.lines[0] if self.lines else ""


def specific_lines(lines: Iterable[str]) -> Iterator[str]:
    """The normalised failure lines (strong ones, failing tests, diagnostics) that name their failure, in
    order, each once: a failing test or a diagnostic names its failure even in one word (`1 - parses (Failed)`)."""
    seen: set[str] = set()
    for line, found in findings.read(job_lines(lines)):
        if found is None and not (cue_score(line) >= STRONG_CUE_SCORE and states_failure(line)):
            continue
        if (name := signature(line)) and name not in seen and (found is not None or not is_generic(name)):
            seen.add(name)
            yield name


@dataclass(frozen=True, slots=True)
class Survey:
    """What one pass over a whole log found: its specific failure lines (at most `TRIAGE_LOG_SIGNATURES`), its
    failing tests and diagnostics (`complete` False when there were more than `TRIAGE_LOG_FINDINGS`), and the
    specific lines of those reported in its last `TRIAGE_CLOSING_LINES` lines (`closing`)."""

    lines: frozenset[str] = frozenset()
    tests: Tally = frozenset()
    diagnostics: Tally = frozenset()
    complete: bool = True
    closing: tuple[str, ...] = ()


def survey(lines: Iterable[str]) -> Survey:
    """Blocking: the `Survey` of a whole log's lines. Findings past the cap are not counted: what was counted
    is still a part of what the log reports (another failure's findings may be looked for in it)."""
    named: set[str] = set()
    counts: Counter[findings.Finding] = Counter()
    last: deque[tuple[int, str]] = deque(maxlen=budgets.TRIAGE_FINGERPRINT_LINES)
    room, index = budgets.TRIAGE_LOG_FINDINGS, 0
    for index, (line, found) in enumerate(findings.read(job_lines(lines))):
        if found is not None:
            room -= 1
            counts.update([found] if room >= 0 else [])
        elif not _strong(line):
            continue
        if (name := signature(line)) and (found is not None or not is_generic(name)):
            named.update([name] if len(named) < budgets.TRIAGE_LOG_SIGNATURES else [])
            last.extend([(index, name)] if found is not None else [])
    kept = list(counts.items())
    closing = tuple(dict.fromkeys(name for at, name in last if at >= index - budgets.TRIAGE_CLOSING_LINES))
    return Survey(frozenset(named), _tally(kept, findings.TEST), _tally(kept, findings.DIAGNOSTIC), room >= 0,
                  closing)


def _strong(line: str) -> bool:
    low = line.lower()
    return any(word in low for word in _CUE_WORDS) and cue_score(line) >= STRONG_CUE_SCORE and states_failure(line)


def _tally(counts: Iterable[tuple[findings.Finding, int]], kind: str) -> Tally:
    return frozenset((found.key, n) for found, times in counts if found.kind == kind for n in range(1, times + 1))


def fingerprint(excerpt: Iterable[str], whole: Survey | None = None) -> Fingerprint:
    """The fingerprint of an excerpt's lines; `whole`: the survey of the whole log (see `survey`). An excerpt
    that names nothing (a linter's report has no error word, only its count does) is named by the failing
    tests and diagnostics the log ends with; ones printed earlier (set-up warnings) never name a failure."""
    whole = whole or Survey()
    lines = tuple(specific_lines(excerpt))[: budgets.TRIAGE_FINGERPRINT_LINES] or whole.closing
    return Fingerprint(lines, whole.lines, whole.tests, whole.diagnostics, whole.complete)
