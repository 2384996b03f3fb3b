"""Streaming scan of a build log: fixed-size blocks of whole lines, cue regions and the tail kept.

Memory is bounded by the block size, the region budget and the tail, never by the log size.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from hummingbird_agent import budgets
from hummingbird_agent.logs.clean import decode_clean

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
    rest = b""
    while chunk := handle.read(block_bytes):
        data = rest + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
            continue
        yield data[:cut]
        rest = data[cut + 1 :]
    if rest:
        yield rest


class LazyLines:
    """The lines of a block, split only when somebody asks for them."""

    __slots__ = ("_block", "_lines")

    def __init__(self, block: bytes) -> None:
        self._block = block
        self._lines: list[bytes] | None = None

    @property
    def is_split(self) -> bool:
        return self._lines is not None

    def get(self) -> list[bytes]:
        if self._lines is None:
            self._lines = self._block.split(b"\n")
        return self._lines


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
        self.lines.extend(_clip(raw) for raw in self.raw)
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
        known = {self.tail_start + i: t for i, t in enumerate(self.tail)}
        for region in self.regions:
            known.update((region.start + i, t) for i, t in enumerate(region.lines))
        return known


def _clip(raw: bytes) -> str:
    return decode_clean(raw[:_CLIP_BYTES])[: budgets.EXCERPT_MAX_LINE_CHARS]


# Bytes of a raw line that can reach its clipped text (a character is at least one byte; cleaning only removes).
_CLIP_BYTES = budgets.EXCERPT_MAX_LINE_CHARS * 2
