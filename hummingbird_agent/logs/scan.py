"""One pass over a log: cue lines found block by block, regions around them kept, the tail kept.

The hot loop stays in C: one vectorised pass finds the lines holding a literal (`needles`); Python only
touches those lines, decoded together. Lines of a region are kept raw (taken from the block's lines in one
slice) and cleaned only if the region is still kept at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from hummingbird_agent import budgets
from hummingbird_agent.logs.clean import decode_clean_lines
from hummingbird_agent.logs.needles import LiteralLines
from hummingbird_agent.logs.stream import _CLIP_BYTES, HitFinder, LazyLines, LogView, Region, _clip

LineScorer = Callable[[str], float]
# Bytes of a cue line that are scored.
_SCORED_BYTES = 4096


def literal_finder(literals: Iterable[bytes], score: LineScorer) -> HitFinder:
    """A hit finder: lines containing one of `literals` (ASCII case-insensitive) that `score` rates above 0."""
    lines_with = LiteralLines(literals)

    def find(block: bytes, lines: LazyLines) -> list[tuple[int, float]]:
        indexes, newlines = lines_with.find(block, lines.newlines())
        if not indexes.size:
            return []
        bounds = np.concatenate(([-1], newlines, [len(block)]))
        starts = bounds[indexes] + 1
        ends = np.minimum(bounds[indexes + 1], starts + _SCORED_BYTES)
        raw = b"\n".join([block[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)])
        hits: list[tuple[int, float]] = []
        for index, line in zip(indexes.tolist(), decode_clean_lines(raw), strict=True):
            value = score(line)
            if value > 0:
                hits.append((index, value))
        return hits

    return find


class Scanner:
    """Feed blocks in order, then call `view()`."""

    def __init__(self, finder: HitFinder, window: int = budgets.EXCERPT_WINDOW_LINES) -> None:
        self._finder = finder
        self._window = window
        self._closed: list[Region] = []
        self._scores: list[float] = []  # of the closed regions, in the same order
        self._open: Region | None = None
        self._before: list[bytes] = []  # the `window` raw lines before the current block
        self._tail: list[bytes] = []
        self._base = 1  # line number of the current block's first line

    def feed(self, block: bytes) -> None:
        lines = LazyLines(block)
        hits = self._finder(block, lines)
        count = lines.count()
        for index, value in hits:
            self._hit(self._base + index, value, lines, count)
        self._fill(lines, count)
        keep = max(self._window, budgets.EXCERPT_TAIL_LINES)
        last = lines.last(keep)
        self._tail = (self._tail + last)[-budgets.EXCERPT_TAIL_LINES :]
        self._before = (self._before + last)[-self._window :] if self._window else []
        self._base += count

    def view(self) -> LogView:
        if self._open is not None:
            self._close()
        total = self._base - 1
        for region in self._closed:
            region.clean()
        tail = tuple(_clip(raw) for raw in self._tail)
        return LogView(total, tuple(self._closed), total - len(tail) + 1, tail)

    def _hit(self, line_no: int, value: float, lines: LazyLines, count: int) -> None:
        region = self._open
        if region is not None:
            capped = line_no - region.start >= budgets.EXCERPT_MAX_REGION_LINES
            if capped or line_no - self._window > region.last_needed + 1:
                if capped:
                    region.last_needed = min(region.last_needed, line_no - 1)
                self._fill(lines, count)  # closes it: everything it needs is in this block by now
                region = None
        if region is None:
            start = max(1, line_no - self._window, self._base - len(self._before))
            if self._closed:
                start = max(start, self._closed[-1].end + 1)
            region = self._open = Region(start=start, last_needed=line_no)
        region.last_needed = max(region.last_needed, line_no + self._window)
        region.hits[line_no] = value

    def _fill(self, lines: LazyLines, count: int) -> None:
        region = self._open
        if region is None:
            return
        block_end = self._base + count - 1
        first, last = region.start + len(region.raw) - self._base, min(region.last_needed, block_end) - self._base
        if first < 0:  # lines of the previous block, kept in `_before`
            held = len(self._before)
            region.raw.extend(raw[:_CLIP_BYTES] for raw in self._before[held + first : held + min(last + 1, 0)])
            first = 0
        if first <= last:
            region.raw.extend(lines.clipped(first, last))
        if region.last_needed <= block_end:
            self._close()

    def _close(self) -> None:
        region, self._open = self._open, None
        if region is None or not region.raw:
            return
        self._closed.append(region)
        self._scores.append(region.score)
        if len(self._closed) > budgets.EXCERPT_MAX_REGIONS:
            # Drop the weakest older region (the first of equals); the most recent quarter is always kept
            # because the end of a failed log is where failures usually are.
            older = len(self._closed) - budgets.EXCERPT_MAX_REGIONS // 4
            weakest = self._scores.index(min(self._scores[:older]))
            del self._closed[weakest], self._scores[weakest]
