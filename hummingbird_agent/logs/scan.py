"""One pass over a log: cue lines found block by block, regions around them kept, the tail kept.

The hot loop stays in C: one vectorised pass finds the lines holding a literal (`needles`); Python only
touches those lines (with `shape_finder`, most only to look their score up). A region's lines are kept raw
(slices of the blocks, or for a plain file only their byte offsets, read again at the end) and cleaned only
if the region is still kept at the end.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Iterable

import numpy as np

from hummingbird_agent import budgets
from hummingbird_agent.logs.clean import decode_clean, decode_clean_lines
from hummingbird_agent.logs.needles import LiteralLines
from hummingbird_agent.logs.stream import _CLIP_BYTES, HitFinder, LazyLines, LogView, Region, _clip

LineScorer = Callable[[str], float]
# Bytes of a cue line that are scored.
_SCORED_BYTES = 4096


def literal_finder(literals: Iterable[bytes], score: LineScorer) -> HitFinder:
    """A hit finder: lines containing one of `literals` (ASCII case-insensitive) that `score` rates above 0."""
    lines_with = LiteralLines(literals)

    def find(block: bytes, lines: LazyLines) -> list[tuple[int, float]]:
        indexes, starts, ends = _cue_lines(lines_with, block, lines)
        if not indexes:
            return []
        raw = b"\n".join([block[a:b] for a, b in zip(starts, ends, strict=True)])
        hits: list[tuple[int, float]] = []
        for index, line in zip(indexes, decode_clean_lines(raw), strict=True):
            value = score(line)
            if value > 0:
                hits.append((index, value))
        return hits

    return find


# Bytes of a line whose scores may differ only as their nonzero digits differ.
_DIGITS_AS_ONE = bytes.maketrans(b"23456789", b"11111111")


def shape_finder(literals: Iterable[bytes], score: LineScorer) -> HitFinder:
    """`literal_finder` for a `score` that reads a nonzero digit as any other (as `cue_score` does): a line's
    score is remembered by its raw bytes with digits 2-9 read as 1, and most cue lines of a build log are
    then a dictionary look-up, never decoded. Cleaning maps digits to themselves, so equal keys mean cleaned
    lines that differ only in nonzero digits."""
    lines_with = LiteralLines(literals)
    memo: dict[bytes, float] = {}
    held = 0  # bytes of the keys in `memo`

    def find(block: bytes, lines: LazyLines) -> list[tuple[int, float]]:
        nonlocal held
        indexes, starts, ends = _cue_lines(lines_with, block, lines)
        hits: list[tuple[int, float]] = []
        for index, a, b in zip(indexes, starts, ends, strict=True):
            key = block[a:b].translate(_DIGITS_AS_ONE)
            value = memo.get(key)
            if value is None:
                if held > budgets.EXCERPT_SCORE_MEMO_BYTES:
                    memo.clear()
                    held = 0
                value = memo[key] = score(decode_clean(block[a:b]))
                held += len(key)
            if value > 0:
                hits.append((index, value))
        return hits

    return find


def _cue_lines(lines_with: LiteralLines, block: bytes, lines: LazyLines) -> tuple[list[int], list[int], list[int]]:
    """The indexes of the block's lines holding a literal, and where the scored prefix of each starts and ends."""
    indexes, newlines = lines_with.find(block, lines.newlines())
    if not indexes.size:
        return [], [], []
    bounds = np.concatenate(([-1], newlines, [len(block)]))
    starts = bounds[indexes] + 1
    ends = np.minimum(bounds[indexes + 1], starts + _SCORED_BYTES)
    return indexes.tolist(), starts.tolist(), ends.tolist()


class Scanner:
    """Feed blocks in order, then call `view()`.

    With `reread`, the path of the plain file the blocks are read from, a region's lines are not copied as the
    scan passes them: only their byte offsets are, and `view()` reads the regions still kept again (most
    regions of a long log are dropped, and a region may cover thousands of lines).
    """

    def __init__(
        self, finder: HitFinder, window: int = budgets.EXCERPT_WINDOW_LINES, reread: str | None = None
    ) -> None:
        self._finder = finder
        self._window = window
        self._reread = reread
        self._offset = 0  # byte offset of the current block in the file
        self._closed: list[Region] = []
        self._order: list[int] = []  # the closed regions' sequence numbers, in the same (ascending) order
        self._older: list[tuple[float, int]] = []  # heap of (score, sequence number) of the first closed regions
        self._closes = 0
        self._open: Region | None = None
        self._before: list[bytes] = []  # the `window` raw lines before the current block
        self._tail: list[bytes] = []
        self._base = 1  # line number of the current block's first line

    def feed(self, block: bytes) -> None:
        lines = LazyLines(block)
        hits = self._finder(block, lines)
        count = lines.count()
        window, limit = self._window, budgets.EXCERPT_MAX_REGION_LINES
        for index, value in hits:
            line_no, region = self._base + index, self._open
            # Most cue lines join the open region: done here, without a call.
            if region is not None and line_no - region.start < limit and line_no - window <= region.last_needed + 1:
                region.last_needed = max(region.last_needed, line_no + window)
                region.hits[line_no] = value
            else:
                self._hit(line_no, value, lines, count)
        self._fill(lines, count)
        keep = max(self._window, budgets.EXCERPT_TAIL_LINES)
        last = lines.last(keep)
        self._tail = (self._tail + last)[-budgets.EXCERPT_TAIL_LINES :]
        self._before = (self._before + last)[-self._window :] if self._window else []
        self._base += count
        self._offset += len(block) + 1

    def view(self) -> LogView:
        if self._open is not None:
            self._close()
        total = self._base - 1
        if self._reread is not None:
            _read_again(self._reread, self._closed)
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
        first, last = region.start + region.pending - self._base, min(region.last_needed, block_end) - self._base
        if first < 0:  # lines of the previous block, kept in `_before`
            self._keep_before(region, first, last)
            first = 0
        if first <= last:
            if self._reread is None:
                region.raw.extend(lines.spans(first, last))
            else:
                _mark(region, self._offset + lines.start(first), self._offset + lines.start(last + 1) - 1)
            region.pending += last - first + 1
        if region.last_needed <= block_end:
            self._close()

    def _keep_before(self, region: Region, first: int, last: int) -> None:
        """Lines `first`..`last` (negative: counted back from the current block) of the previous block."""
        held = len(self._before)
        before = self._before[held + first : held + min(last + 1, 0)]
        if not before:
            return
        if self._reread is None:
            region.raw.extend(raw[:_CLIP_BYTES] for raw in before)
        else:
            at = self._offset - sum(len(raw) + 1 for raw in self._before[held + first :])
            _mark(region, at, at + sum(len(raw) + 1 for raw in before) - 1)
        region.pending += len(before)

    def _close(self) -> None:
        region, self._open = self._open, None
        if region is None or not region.pending:
            return
        self._closed.append(region)
        self._order.append(self._closes)
        self._closes += 1
        if len(self._closed) > budgets.EXCERPT_MAX_REGIONS:
            # Drop the weakest older region (the first of equals); the most recent quarter is always kept
            # because the end of a failed log is where failures usually are. The heap holds the first
            # `len(self._older)` closed regions: those that have left the recent quarter.
            older = len(self._closed) - budgets.EXCERPT_MAX_REGIONS // 4
            while len(self._older) < older:
                entering = len(self._older)
                heapq.heappush(self._older, (self._closed[entering].score, self._order[entering]))
            weakest = bisect_left(self._order, heapq.heappop(self._older)[1])
            del self._closed[weakest], self._order[weakest]

def _mark(region: Region, at: int, stop: int) -> None:
    """Lines from byte `at` to byte `stop` (exclusive) join the region's raw lines, to be read again."""
    if not region.pending:
        region.at = at
    region.stop = stop


def _read_again(path: str, regions: list[Region]) -> None:
    """The raw (clipped) lines of each region, read from the file by their byte offsets."""
    with open(path, "rb") as handle:
        for region in regions:
            handle.seek(region.at)
            raws = handle.read(region.stop - region.at).split(b"\n")
            if len(raws) != region.pending:
                raise OSError(f"{path} changed while it was read")
            region.raw = [raw[:_CLIP_BYTES] for raw in raws]
