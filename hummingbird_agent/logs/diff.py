"""Lines of a failed log that a passing run of the same job did not print (compared by signature)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from hummingbird_agent import budgets
from hummingbird_agent.logs.clean import decode_clean
from hummingbird_agent.logs.cues import cue_score
from hummingbird_agent.logs.signature import signature
from hummingbird_agent.logs.stream import HitFinder, LazyLines

# New lines that are routinely new in every run and never explain a failure: transfers and progress.
_NOISE = re.compile(
    r"^\s*(?:\[\w+\]\s*)?(?:Download(?:ing|ed)|Fetch(?:ing|ed)|Get:\d|Receiving|Resolving|Unpacking"
    r"|Progress|Pulling|Extracting|Waiting|Collecting|Installing collected|Requirement already)\b",
    re.IGNORECASE,
)


def passing_signatures(blocks: Iterable[bytes]) -> frozenset[int]:
    """Hashes of the signatures of every line of the passing log (bounded, see budgets)."""
    seen: set[int] = set()
    for block in blocks:
        for raw in block.split(b"\n"):
            seen.add(hash(signature(decode_clean(raw[: budgets.EXCERPT_MAX_LINE_CHARS]))))
        if len(seen) >= budgets.EXCERPT_MAX_PASSING_SIGNATURES:
            break
    return frozenset(seen)


def new_line_score(line: str) -> float:
    """Score of a line the passing run did not print: novelty plus general failure evidence."""
    if not line.strip():
        return 0.0
    cue = cue_score(line)
    if not cue and _NOISE.match(line):
        return 0.0
    return 0.5 + cue


def diff_finder(known: frozenset[int]) -> HitFinder:
    """A hit finder: lines whose signature the passing run never printed."""

    def find(_block: bytes, lines: LazyLines) -> list[tuple[int, float]]:
        hits: list[tuple[int, float]] = []
        for index, raw in enumerate(lines.get()):
            line = decode_clean(raw[: budgets.EXCERPT_MAX_LINE_CHARS])
            if line and hash(signature(line)) not in known:
                value = new_line_score(line)
                if value > 0:
                    hits.append((index, value))
        return hits

    return find
