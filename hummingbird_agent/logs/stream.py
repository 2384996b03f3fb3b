"""Streaming scan of a build log: fixed-size blocks of whole lines, cue regions and the tail kept.

Memory is bounded by the block size, the region budget and the tail, never by the log size.
"""

from __future__ import annotations

import gzip
import io
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
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")
    return open(path, "rb")


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

    __slots__ = ("_block", "_bounds", "_lines", "_long", "_newlines")

    def __init__(self, block: bytes) -> None:
        self._block = block
        self._lines: list[bytes] | None = None
        self._newlines: Indexes | None = None
        self._bounds: list[int] | None = None  # -1, the newline positions, the block's length
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
        return self._block[self._start(max(self.count() - keep, 0)) :].split(b"\n")

    def clipped(self, first: int, last: int) -> list[bytes]:
        """Lines `first`..`last` (0-based, inclusive), each clipped to `_CLIP_BYTES`."""
        lines = self.get()[first : last + 1]
        for index in self._long_lines():
            if first <= index <= last:
                lines[index - first] = lines[index - first][:_CLIP_BYTES]
        return lines

    def _start(self, index: int) -> int:
        """Where line `index` starts (for the line after the last: one past the block's end)."""
        if self._bounds is None:
            self._bounds = [-1, *self.newlines().tolist(), len(self._block)]
        return self._bounds[index] + 1

    def _long_lines(self) -> list[int]:
        if self._long is None:
            lengths = np.diff(np.concatenate(([-1], self.newlines(), [len(self._block)]))) - 1
            self._long = np.flatnonzero(lengths > _CLIP_BYTES).tolist()
        return self._long


@dataclass(slots=True)
class Region:
    """Consecutive lines around one or more cue lines: raw (clipped) while the scan runs, cleaned once it
    is kept (`clean()`), so the many regions a long log drops again are never decoded."""

    start: int
    lines: list[str] = field(default_factory=list)
    hits: dict[int, float] = field(default_factory=dict)
    last_needed: int = 0
    raw: list[bytes] = field(default_factory=list)

    @property
    def score(self) -> float:
        return sum(self.hits.values())

    @property
    def end(self) -> int:
        return self.start + len(self.lines) + len(self.raw) - 1

    def clean(self) -> None:
        if self.raw:
            texts = decode_clean_lines(b"\n".join(self.raw))
            self.lines.extend(text[: budgets.EXCERPT_MAX_LINE_CHARS] for text in texts)
        self.raw = []


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
