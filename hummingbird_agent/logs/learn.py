"""Learning from earlier failures of the same project: their cue words, their shape, where they sit.

An example is one earlier failure chunk with its keywords (the knowledge base supplies them as JSONL
lines `{"chunk": "...", "keywords": [...]}`, optionally `"from_end"`: lines after the chunk).
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from hummingbird_agent import budgets
from hummingbird_agent.logs.clean import clean_line
from hummingbird_agent.logs.signature import signature

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]+|[^\sA-Za-z0-9<>]")
_STOP = frozenset("the and for with from that this was are not you have into has its".split())


class ExamplesError(ValueError):
    """An examples file that cannot be read as example records; the message is one line."""


@dataclass(frozen=True, slots=True)
class Example:
    """One earlier failure: its chunk, its search keywords, optionally its distance from the log end."""

    chunk: str
    keywords: tuple[str, ...] = ()
    from_end: int | None = None


@dataclass(frozen=True, slots=True)
class Profile:
    """What the examples teach: token sets of chunk lines, keywords, chunk sizes, positions."""

    lines: tuple[frozenset[str], ...]
    index: dict[str, tuple[int, ...]]  # word -> positions in `lines` containing it
    starts: tuple[frozenset[str], ...]
    keywords: tuple[str, ...]
    literals: tuple[bytes, ...]
    length: int
    from_end: int | None


def tokens(line: str) -> frozenset[str]:
    """Lower-cased words and symbols of a line's signature (volatile tokens masked)."""
    return frozenset(w.lower() for w in _WORD.findall(signature(line)) if w.lower() not in _STOP)


def parse_examples(lines: Iterable[str]) -> list[Example]:
    """Parse JSONL example records; raise ExamplesError naming the first bad line."""
    out: list[Example] = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
            chunk = record["chunk"]
            keywords = tuple(record.get("keywords") or ())
            from_end = record.get("from_end")
        except (ValueError, KeyError, TypeError) as exc:
            raise ExamplesError(f"examples line {number}: not a JSON object with a 'chunk' ({exc})") from exc
        if not isinstance(chunk, str) or not all(isinstance(k, str) for k in keywords):
            raise ExamplesError(f"examples line {number}: 'chunk' must be text and 'keywords' a list of text")
        if from_end is not None and not isinstance(from_end, int):
            raise ExamplesError(f"examples line {number}: 'from_end' must be an integer")
        out.append(Example(chunk, keywords, from_end))
        if len(out) >= budgets.EXCERPT_MAX_EXAMPLES:
            break
    return out


def learn(examples: Iterable[Example]) -> Profile:
    """Build the profile that `example_score` and the block ranking use."""
    line_sets: list[frozenset[str]] = []
    starts: list[frozenset[str]] = []
    lengths: list[int] = []
    positions: list[int] = []
    keywords: set[str] = set()
    words: Counter[str] = Counter()
    for example in examples:
        sets = _line_tokens(example.chunk)
        if not sets:
            continue
        line_sets.extend(s for s in sets if s)
        starts.append(sets[0])
        lengths.append(len(example.chunk.split("\n")))
        keywords.update(k for k in example.keywords if k.strip())
        words.update(w for s in set(sets) for w in s if len(w) >= 4)
        if example.from_end is not None:
            positions.append(example.from_end)
    unique = tuple(dict.fromkeys(line_sets))
    return Profile(
        lines=unique,
        index=_word_index(unique),
        starts=tuple(dict.fromkeys(starts)),
        keywords=tuple(sorted(keywords)),
        literals=_literals(keywords, words),
        length=int(statistics.median(lengths)) if lengths else 0,
        from_end=int(statistics.median(positions)) if positions else None,
    )


def _line_tokens(chunk: str) -> list[frozenset[str]]:
    """Token sets of the chunk's lines that are not blank once cleaned, in order (empty sets included)."""
    kept = [clean_line(raw) for raw in chunk.split("\n")]
    return [tokens(line) for line in kept if line.strip()]


def _literals(keywords: set[str], words: Counter[str]) -> tuple[bytes, ...]:
    """Byte strings a prefilter looks for: every keyword and the 60 commonest long words of the chunks."""
    literals = {k.lower().encode() for k in keywords}
    literals.update(w.encode() for w, _ in words.most_common(60))
    return tuple(sorted(literals))


def _word_index(lines: tuple[frozenset[str], ...]) -> dict[str, tuple[int, ...]]:
    """Word -> positions in `lines` containing it (single characters, punctuation mostly, left out)."""
    index: dict[str, list[int]] = {}
    for position, line_set in enumerate(lines):
        for word in line_set:
            if len(word) > 1:
                index.setdefault(word, []).append(position)
    return {w: tuple(p) for w, p in index.items()}


def similarity(line: frozenset[str], profile: Profile) -> float:
    """Best Jaccard similarity of a line's tokens to any example line sharing a word with it."""
    best = 0.0
    candidates = {p for word in line if word in profile.index for p in profile.index[word]}
    for position in candidates:
        other = profile.lines[position]
        union = len(line | other)
        if union:
            best = max(best, len(line & other) / union)
    return best


def example_score(profile: Profile, line: str) -> float:
    """Evidence that a cleaned line belongs to a failure chunk like the examples (0..~4)."""
    if not line.strip():
        return 0.0
    sim = similarity(tokens(line), profile)
    value = 3.0 * sim if sim >= 0.4 else 0.0
    if any(k in line for k in profile.keywords):
        value += 1.5
    return value
