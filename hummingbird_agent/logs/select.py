"""From scored lines to the excerpt: group cue lines into blocks, rank the blocks, fit the budget.

A block is a run of cue lines (small gaps allowed) plus the lines that visibly belong to it: stack
frames, indented details and the lines of the same message up to a blank line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

# A following line belongs to the block when it is indented, a stack frame, a caret or a `|` gutter
# (compiler snippets), a `+`/`-` diff line (assertion output), or continues a bracketed tool prefix.
_CONTINUATION = re.compile(r"^(?:\s+\S|\s*(?:at |File |\^|\||\+|-|~|>|Caused by|\.\.\.)|\[(?:ERROR|FAIL))")


@dataclass(frozen=True, slots=True)
class Block:
    """A candidate range (1-based, inclusive) with its evidence."""

    first: int
    last: int
    score: float


@dataclass(frozen=True, slots=True)
class Shape:
    """Tunable grouping and ranking parameters of one mode."""

    gap: int = 2  # lines without evidence allowed inside a block
    follow: int = 12  # continuation lines a block may grow by after its last cue line
    before: int = 0  # lines added before the first cue line when they are not blank
    end_weight: float = 1.5  # extra weight of a block at the very end of the log
    end_scale: float = 150.0  # lines from the end over which that extra weight decays
    keep_ratio: float = 0.5  # other blocks kept when their score reaches this share of the best
    bridge: int = 0  # continuation lines (stack frames, indented details) allowed between cue lines
    distinct: bool = False  # a block's evidence counts each line once up to its digits (a repeat adds nothing)


def end_prior(total: int, shape: Shape) -> Callable[[int], float]:
    """Weight of a block by its distance from the end of the log."""
    return lambda last: 1.0 + shape.end_weight * math.exp(-(total - last) / shape.end_scale)


def build_blocks(
    scores: dict[int, float], text: dict[int, str], prior: Callable[[int], float], shape: Shape
) -> list[Block]:
    """Group scored lines into blocks and score each, weighted by `prior` of the block's last line."""
    blocks: list[Block] = []
    hits = sorted(n for n, v in scores.items() if v > 0)
    i = 0
    while i < len(hits):
        first = last = hits[i]
        i += 1
        while i < len(hits) and _joins(text, last, hits[i], shape):
            last = hits[i]
            i += 1
        last = _follow(text, last, shape.follow)
        first = _lead(text, first, shape.before)
        blocks.append(Block(first, last, _evidence(scores, text, first, last, shape.distinct) * prior(last)))
    return blocks


# Numbers and hex ids (line numbers, counters, commits, addresses): lines that differ only in these are
# the same complaint. One regex, not `signature`'s ten, because a log may be all error lines.
_VOLATILE = re.compile(r"\b(?=[0-9a-f]*\d)[0-9a-f]{7,}\b|\d+")


def line_shape(line: str) -> str:
    """A line without its numbers and hex ids: lines of the same shape make the same complaint."""
    return _VOLATILE.sub("", line)


def _evidence(scores: dict[int, float], text: dict[int, str], first: int, last: int, distinct: bool) -> float:
    """Sum of the lines' scores (each capped at 3); with `distinct`, the best score of each line shape once.

    A tool that prints one complaint per file or per retry (`unmappable character`, a logger's `ERROR:
    Stream 3 bad state`) then weighs like one complaint, not like a wall of errors.
    """
    if not distinct:
        return sum(min(scores.get(n, 0.0), 3.0) for n in range(first, last + 1))
    best: dict[str, float] = {}
    for n in range(first, last + 1):
        value = min(scores.get(n, 0.0), 3.0)
        if value > 0:
            key = line_shape(text.get(n, ""))
            best[key] = max(best.get(key, 0.0), value)
    return sum(best.values())


def choose(blocks: list[Block], max_lines: int, shape: Shape) -> list[tuple[int, int]]:
    """Pick the best block, then others that score close to it, within `max_lines` lines."""
    ranked = sorted(blocks, key=lambda b: (-b.score, -b.last))
    chosen: list[tuple[int, int]] = []
    used = 0
    for block in ranked:
        if chosen and block.score < shape.keep_ratio * ranked[0].score:
            break
        room = max_lines - used
        if room <= 0:
            break
        last = min(block.last, block.first + room - 1)
        chosen.append((block.first, last))
        used += last - block.first + 1
    return merge(chosen)


def fit(ranges: list[tuple[int, int]], max_lines: int) -> list[tuple[int, int]]:
    """Ranges in priority order cut to `max_lines` distinct lines in all, sorted and merged."""
    kept: set[int] = set()
    for first, last in ranges:
        for n in range(first, last + 1):
            if len(kept) >= max_lines:
                break
            kept.add(n)
    return merge([(n, n) for n in kept])


def merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sort ranges and merge overlapping or touching ones."""
    out: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def _joins(text: dict[int, str], last: int, hit: int, shape: Shape) -> bool:
    """Whether cue line `hit` continues the block ending at `last`: a short gap, or only continuation lines."""
    if any(n not in text for n in range(last, hit + 1)):
        return False
    if hit - last <= shape.gap + 1:
        return True
    return hit - last - 1 <= shape.bridge and all(
        _CONTINUATION.match(text[n]) for n in range(last + 1, hit) if text[n].strip()
    )


def _follow(text: dict[int, str], last: int, limit: int) -> int:
    for _ in range(limit):
        line = text.get(last + 1)
        if line is None or not line.strip() or not _CONTINUATION.match(line):
            break
        last += 1
    return last


def _lead(text: dict[int, str], first: int, limit: int) -> int:
    for _ in range(limit):
        line = text.get(first - 1)
        if line is None or not line.strip():
            break
        first -= 1
    return first
