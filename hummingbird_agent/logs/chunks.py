"""Example mode's chunk search: find a run of lines that starts, continues and ends like an example chunk.

Each example is a template (its first line, its other lines, its last line, its length, its distance
from the log end). Tokens are weighted by their rarity in the log, so the words every line of this
log prints (`[info]`, timestamps' masks) count little and the words of the failure count much.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from hummingbird_agent.logs.learn import Example
from hummingbird_agent.logs.signature import signature
from hummingbird_agent.logs.steps import is_routine, is_wrap_up

# A line starts a candidate chunk when it resembles an example's first line at least this much.
_START_SIM = 0.45
# A line continues a chunk when it resembles any example line at least this much.
_BODY_SIM = 0.3
# Non-resembling lines (blank ones do not count) tolerated inside a chunk.
_MAX_MISSES = 1
# Bonus of a start line holding one of the examples' keywords.
_KEYWORD_START = 0.3
# Candidate starts examined per log (the most resembling ones).
_MAX_STARTS = 60
# A best chunk scoring below this resembles the examples too little to be trusted alone (a start
# line that merely shares words, no body or end like the examples'); on LogChunks 1.3-2.0 do alike.
WEAK_SCORE = 1.6
# Blank lines a chunk widens across: a message and its details are often one blank line apart.
_WIDEN_BLANKS = 1


# Sub-words: identifiers split at `_`, `.`, `-` and camelCase humps, so that two test classes or two
# source files of the same project share their common parts; single symbols are kept too.
_SUBWORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^\sA-Za-z0-9_]")


def tokens(line: str) -> frozenset[str]:
    """Lower-cased sub-words and symbols of a line's signature (volatile tokens masked)."""
    return frozenset(w.lower() for w in _SUBWORD.findall(signature(line)))


@dataclass(frozen=True, slots=True)
class Template:
    """One example chunk as the search sees it."""

    first: frozenset[str]
    last: frozenset[str]
    length: int  # raw lines, blank ones included
    size: int  # non-blank lines
    from_end: int | None
    keywords: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A candidate chunk (1-based, inclusive) and its score."""

    first: int
    last: int
    score: float


def templates(examples: Iterable[Example]) -> tuple[list[Template], list[frozenset[str]]]:
    """The templates of the examples and the token sets of all their lines."""
    out: list[Template] = []
    body: list[frozenset[str]] = []
    for example in examples:
        raw = example.chunk.split("\n")
        sets = [tokens(line) for line in raw]
        kept = [s for s in sets if s]
        if not kept:
            continue
        body.extend(kept)
        keywords = tuple(k for k in example.keywords if k.strip())
        out.append(Template(kept[0], kept[-1], len(raw), len(kept), example.from_end, keywords))
    return out, list(dict.fromkeys(body))


class Weights:
    """Token weights: inverse line frequency in the log (tokens the log never prints weigh most)."""

    def __init__(self, line_sets: Sequence[frozenset[str]]) -> None:
        self._df = Counter(w for s in line_sets for w in s)
        self._n = len(line_sets) + 1
        self._cache: dict[str, float] = {}

    def of(self, word: str) -> float:
        value = self._cache.get(word)
        if value is None:
            value = self._cache[word] = math.log(self._n / (self._df.get(word, 0) + 1)) + 1.0
        return value

    def sim(self, one: frozenset[str], two: frozenset[str]) -> float:
        """Weighted Jaccard similarity of two token sets."""
        union = sum(self.of(w) for w in one | two)
        return sum(self.of(w) for w in one & two) / union if union else 0.0


def find_chunks(
    text: dict[int, str], total: int, examples: Sequence[Example], limit: int
) -> list[Chunk]:
    """Candidate chunks of the log (known lines `text`), best first; empty when nothing resembles."""
    temps, body = templates(examples)
    if not temps:
        return []
    sets = {n: tokens(line) for n, line in text.items() if line.strip()}
    weights = Weights(list(sets.values()))
    index: dict[str, list[int]] = {}
    for position, line_set in enumerate(body):
        for word in line_set:
            index.setdefault(word, []).append(position)
    body_cache: dict[int, float] = {}

    def body_sim(n: int) -> float:
        value = body_cache.get(n)
        if value is None:
            mine = sets[n]
            near = {p for w in mine if weights.of(w) > 1.5 for p in index.get(w, ())}
            value = body_cache[n] = max((weights.sim(mine, body[p]) for p in near), default=0.0)
        return value

    keywords = {k for t in temps for k in t.keywords}
    starts: list[tuple[float, int, Template]] = []
    for n, line_set in sets.items():
        sim, temp = max(((weights.sim(line_set, t.first), t) for t in temps), key=lambda st: st[0])
        if any(k in text[n] for k in keywords):
            sim += _KEYWORD_START  # the words the examples were found by mark a start line
        if sim >= _START_SIM:
            starts.append((sim, n, temp))
    starts.sort(key=lambda st: -st[0])
    chunks = [_grow(start, sim, temp, text, sets, weights, body_sim, total, limit)
              for sim, start, temp in starts[:_MAX_STARTS]]
    return sorted(chunks, key=lambda c: (-c.score, -c.last))


def _grow(  # noqa: PLR0913 - the search state is passed, not kept in a class
    start: int, sim: float, temp: Template, text: dict[int, str], sets: dict[int, frozenset[str]],
    weights: Weights, body_sim: Callable[[int], float], total: int, limit: int,
) -> Chunk:
    """Extend a chunk from its start line while lines resemble example lines, and score it."""
    cap = min(limit, max(2 * temp.length, temp.length + 10))
    last, misses, matched, total_sim = start, 0, 0, 0.0
    for n in range(start + 1, start + cap):
        if n not in text:
            break
        if n not in sets:
            continue  # blank line: neither a match nor a miss
        value = body_sim(n)
        if value >= _BODY_SIM:
            last, misses = n, 0
            matched += 1
            total_sim += value
        else:
            misses += 1
            if misses > _MAX_MISSES:
                break
    want = max(temp.size - 1, 1)
    body_score = (total_sim / matched) * min(1.0, matched / want) if matched else (1.0 if temp.size <= 1 else 0.0)
    end_score = weights.sim(sets[last], temp.last) if last != start else (1.0 if temp.size <= 1 else 0.0)
    chunk_text = [text[n] for n in range(start, last + 1)]
    keyword = 0.5 if any(k in line for k in temp.keywords for line in chunk_text) else 0.0
    position = 0.0
    if temp.from_end is not None:
        scale = max(20.0, temp.from_end * 0.3)
        position = 0.5 * math.exp(-abs(total - last - temp.from_end) / scale)
    return Chunk(start, last, sim + body_score + 0.5 * end_score + keyword + position)


def widen(text: dict[int, str], first: int, last: int, length: int) -> int:
    """Grow a chunk's end through the output that follows it, to `length` lines at most.

    Chunks are labelled whole (the error and all its details) while the search stops at the first
    lines unlike the examples'; the output goes on until a blank gap, a wrap-up or a routine line.
    """
    blanks, n = 0, last
    while n - first + 1 < length:
        n += 1
        line = text.get(n)
        if line is None or is_wrap_up(line) or is_routine(line):
            break
        if not line.strip():
            blanks += 1
            if blanks > _WIDEN_BLANKS:
                break
            continue
        blanks, last = 0, n
    return last


def only_wrap_up(text: dict[int, str], first: int, last: int) -> bool:
    """Whether a range holds nothing but wrap-up and blank lines (a consequence, not a cause)."""
    return all(not text.get(n, "").strip() or is_wrap_up(text.get(n, "")) for n in range(first, last + 1))
