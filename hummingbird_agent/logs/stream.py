"""Streaming scan of a build log: fixed-size blocks of whole lines, cue regions and the tail kept.

Memory is bounded by the block size, the region budget and the tail, never by the log size.
"""

from __future__ import annotations

import gzip
import io
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from hummingbird_agent import budgets
from hummingbird_agent.logs.clean import decode_clean, decode_clean_lines
from hummingbird_agent.logs.needles import Indexes, newline_positions

# A hit finder gets one block (whole lines, no trailing `\n`) and its lines, and returns the
# indexes (into the lines) of the cue lines with their scores.
HitFinder = Callable[[bytes, "LazyLines"], list[tuple[int, float]]]


def open_log(path: str) -> io.BufferedIOBase:
    """Open a log for binary reading, transparently gunzipping it when it starts with the gzip magic."""
    if is_gzip(path):
        return gzip.open(path, "rb")
    return open(path, "rb")


def is_gzip(path: str) -> bool:
    with open(path, "rb") as probe:
        return probe.read(2) == b"\x1f\x8b"


def read_blocks(handle: io.BufferedIOBase, block_bytes: int) -> Iterator[bytes]:
    """Yield blocks of whole lines without their final `\\n`; block k+1 starts on the next line."""
    pending: list[bytes | memoryview] = []  # the start of the next block's first line
    while chunk := handle.read(block_bytes):
        cut = chunk.rfind(b"\n")
        if cut < 0:
            pending.append(chunk)
            continue
        pending.append(memoryview(chunk)[:cut])
        yield b"".join(pending)  # the block's one copy
        pending = [chunk[cut + 1 :]]
    if rest := b"".join(pending):
        yield rest


class LazyLines:
    """The lines of a block, split only when somebody asks for them; its newline positions, found once."""

    __slots__ = ("_block", "_lines", "_long", "_newlines")

    def __init__(self, block: bytes) -> None:
        self._block = block
        self._lines: list[bytes] | None = None
        self._newlines: Indexes | None = None
        self._long: list[int] | None = None  # indexes of the lines longer than `_CLIP_BYTES`

    @property
    def is_split(self) -> bool:
        return self._lines is not None

    def get(self) -> list[bytes]:
        if self._lines is None:
            self._lines = self._block.split(b"\n")
        return self._lines

    def newlines(self) -> Indexes:
        if self._newlines is None:
            self._newlines = newline_positions(self._block)
        return self._newlines

    def count(self) -> int:
        """The number of lines."""
        if self._lines is not None:
            return len(self._lines)
        if self._newlines is not None:
            return len(self._newlines) + 1
        return self._block.count(b"\n") + 1

    def last(self, keep: int) -> list[bytes]:
        """The last `keep` lines."""
        if self._lines is not None:
            return self._lines[-keep:]
        if self._newlines is None:
            return self._block.rsplit(b"\n", keep)[-keep:]
        return self._block[self.start(max(self.count() - keep, 0)) :].split(b"\n")

    def spans(self, first: int, last: int) -> list[bytes]:
        """Lines `first`..`last` (0-based, inclusive) joined by `\\n`, each clipped to `_CLIP_BYTES`: slices of the
        block, one between any two long lines, so the lines themselves are never split apart."""
        out: list[bytes] = []
        long = self._long_lines()
        at = first
        for index in long[bisect_left(long, first) : bisect_right(long, last)]:
            if at < index:
                out.append(self._block[self.start(at) : self.start(index) - 1])
            out.append(self._block[self.start(index) : self.start(index) + _CLIP_BYTES])
            at = index + 1
        if at <= last:
            out.append(self._block[self.start(at) : self.start(last + 1) - 1])
        return out

    def start(self, index: int) -> int:
        """Where line `index` starts (for the line after the last: one past the block's end)."""
        if index == 0:
            return 0
        newlines = self.newlines()
        return int(newlines[index - 1]) + 1 if index <= len(newlines) else len(self._block) + 1

    def _long_lines(self) -> list[int]:
        if self._long is None:
            lengths = np.diff(np.concatenate(([-1], self.newlines(), [len(self._block)]))) - 1
            self._long = np.flatnonzero(lengths > _CLIP_BYTES).tolist()
        return self._long


@dataclass(slots=True)
class Region:
    """Consecutive lines around one or more cue lines: raw (clipped) while the scan runs, cleaned once it
    is kept (`clean()`), so the many regions a long log drops again are never decoded. The raw lines are
    held as a few `\\n`-joined slices of the blocks (`raw`), `pending` lines in all."""

    start: int
    lines: list[str] = field(default_factory=list)
    hits: dict[int, float] = field(default_factory=dict)
    last_needed: int = 0
    raw: list[bytes] = field(default_factory=list)
    pending: int = 0
    at: int = 0  # when the raw lines are re-read from the file: the byte offsets of the first one
    stop: int = 0  # and of the end of the last one

    @property
    def score(self) -> float:
        return sum(self.hits.values())

    @property
    def end(self) -> int:
        return self.start + len(self.lines) + self.pending - 1

    def clean(self) -> None:
        if self.raw:
            self.lines.extend(decode_clean_lines(b"\n".join(self.raw), budgets.EXCERPT_MAX_LINE_CHARS))
        self.raw, self.pending = [], 0


@dataclass(frozen=True, slots=True)
class LogView:
    """What the scan kept of a log: its cue regions, its last lines and its line count."""

    total_lines: int
    regions: tuple[Region, ...]
    tail_start: int
    tail: tuple[str, ...]

    def text_of(self) -> dict[int, str]:
        """Every kept line by 1-based line number."""
        known = dict(zip(range(self.tail_start, self.tail_start + len(self.tail)), self.tail, strict=True))
        for region in self.regions:
            known.update(zip(range(region.start, region.start + len(region.lines)), region.lines, strict=True))
        return known


def _clip(raw: bytes) -> str:
    return decode_clean(raw[:_CLIP_BYTES])[: budgets.EXCERPT_MAX_LINE_CHARS]


# Bytes of a raw line that can reach its clipped text (a character is at least one byte; cleaning only removes).
_CLIP_BYTES = budgets.EXCERPT_MAX_LINE_CHARS * 2
