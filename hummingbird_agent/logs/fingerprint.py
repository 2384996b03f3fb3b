"""Fingerprints of a failure: the normalised strong failure lines of its excerpt, with generic lines left out.

The knowledge base names Symptoms by the same normalisation (`signature` of the lines `strong_lines` keeps),
so a failure's fingerprint and its Symptoms agree. Two failures match when the other shows nearly all of this
one's lines; a fingerprint of generic lines only ("Job failed: exit code 1", "make: *** Error 2", a bare
timeout) never matches anything: that it failed is no evidence of why. Neither does a tool's count of its
failures ("found 3 failures"), nor a weaker line (set-up output every run prints would match unrelated
failures).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from hummingbird_agent import budgets
from hummingbird_agent.logs.cues import cue_score
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


def strong_lines(lines: Iterable[str], min_score: float = STRONG_CUE_SCORE) -> Iterator[tuple[str, str]]:
    """(signature, line) of each line that states a failure at least as strongly as `min_score`."""
    for line in lines:
        if cue_score(line) >= min_score and (name := signature(line)):
            yield name, line


def is_generic(name: str) -> bool:
    """Whether a normalised line says only that something failed, not what."""
    if _COUNT.search(name) or " " not in name.strip():
        return True  # a count of failures, or a bare name (`java.lang.Exception`) with no message
    words = {w.lower() for w in _WORD.findall(name)} - _PLACEHOLDERS
    return len(words - _GENERIC_WORDS) < _MIN_SPECIFIC_WORDS


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The specific normalised failure lines of one log's excerpt (empty: nothing specific, never matches), and
    every specific failure line anywhere in that log (what another failure is looked for in)."""

    lines: tuple[str, ...] = ()
    anywhere: frozenset[str] = frozenset()

    @property
    def generic(self) -> bool:
        return not self.lines

    def covered_by(self, other: Fingerprint) -> bool:
        """Whether `other`'s log shows (nearly) every line of this failure; generic fingerprints never match."""
        shown = other.anywhere | set(other.lines)
        if self.generic or not shown:
            return False
        shared = sum(1 for line in self.lines if line in shown)
        return shared / len(self.lines) >= budgets.TRIAGE_FINGERPRINT_MIN_COVERAGE

    def short(self) -> str:
        """The first line, for a table cell or a log line."""
        return self.lines[0] if self.lines else ""


def specific_lines(lines: Iterable[str]) -> Iterator[str]:
    """The normalised strong failure lines that name their failure, in order, each once."""
    seen: set[str] = set()
    for name, _ in strong_lines(lines):
        if name not in seen and not is_generic(name):
            seen.add(name)
            yield name


def fingerprint(excerpt: Iterable[str], anywhere: Iterable[str] = ()) -> Fingerprint:
    """The fingerprint of an excerpt's lines; `anywhere`: the whole log's specific lines (see `specific_lines`)."""
    lines = tuple(specific_lines(excerpt))[: budgets.TRIAGE_FINGERPRINT_LINES]
    return Fingerprint(lines, frozenset(anywhere))
