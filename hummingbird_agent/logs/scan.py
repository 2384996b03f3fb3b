"""One pass over a log: cue lines found block by block, regions around them kept, the tail kept.

The hot loop stays in C: one vectorised pass finds the lines holding a literal (`needles`); Python only
touches those lines. Lines of a region are kept raw and cleaned only if the region is still kept at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hummingbird_agent import budgets
from hummingbird_agent.logs.clean import decode_clean
from hummingbird_agent.logs.needles import LiteralLines
from hummingbird_agent.logs.stream import _CLIP_BYTES, HitFinder, LazyLines, LogView, Region, _clip

LineScorer = Callable[[str], float]


def literal_finder(literals: Iterable[bytes], score: LineScorer) -> HitFinder:
    """A hit finder: lines containing one of `literals` (ASCII case-insensitive) that `score` rates above 0."""
    lines_with = LiteralLines(literals)

    def find(block: bytes, _lines: LazyLines) -> list[tuple[int, float]]:
        indexes, newlines = lines_with.find(block)
        ends = newlines.tolist()
        hits: list[tuple[int, float]] = []
        for index in indexes.tolist():
            line_start = ends[index - 1] + 1 if index else 0
            line_end = ends[index] if index < len(ends) else len(block)
            value = score(decode_clean(block[line_start : min(line_end, line_start + 4096)]))
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
        lazy = LazyLines(block)
        hits = self._finder(block, lazy)
        if hits or self._open is not None:
            lines = lazy.get()
            for index, value in hits:
                self._hit(self._base + index, value, lines)
            self._fill(lines)
            count = len(lines)
        else:
            count = block.count(b"\n") + 1
        keep = max(self._window, budgets.EXCERPT_TAIL_LINES)
        last = lazy.get()[-keep:] if lazy.is_split else block.rsplit(b"\n", keep)[-keep:]
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

    def _hit(self, line_no: int, value: float, lines: list[bytes]) -> None:
        region = self._open
        if region is not None:
            capped = line_no - region.start >= budgets.EXCERPT_MAX_REGION_LINES
            if capped or line_no - self._window > region.last_needed + 1:
                if capped:
                    region.last_needed = min(region.last_needed, line_no - 1)
                self._fill(lines)  # closes it: everything it needs is in this block by now
                region = None
        if region is None:
            start = max(1, line_no - self._window, self._base - len(self._before))
            if self._closed:
                start = max(start, self._closed[-1].end + 1)
            region = self._open = Region(start=start, last_needed=line_no)
        region.last_needed = max(region.last_needed, line_no + self._window)
        region.hits[line_no] = value

    def _fill(self, lines: list[bytes]) -> None:
        region = self._open
        if region is None:
            return
        block_end = self._base + len(lines) - 1
        for line_no in range(region.start + len(region.raw), min(region.last_needed, block_end) + 1):
            index = line_no - self._base
            raw = lines[index] if index >= 0 else self._before[len(self._before) + index]
            region.raw.append(raw[:_CLIP_BYTES])
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
            weakest = min(range(older), key=self._scores.__getitem__)
            del self._closed[weakest], self._scores[weakest]
