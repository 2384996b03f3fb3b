"""Lines of a block that hold any of a set of literals (ASCII case-insensitive), found in one vectorised pass.

A literal of three bytes or more has a byte pair at an even offset of the block wherever it starts, so one
table indexed by the block's 16-bit words (all at even offsets, looked up at once) finds every literal:
each one is entered under its rarest pair at even and at odd offsets within it, in any ASCII case. Pairs
are rated by how often they occur in the first block searched (`pa` of `panic` is in every `PASSED`), so
the positions left to check byte by byte are few. Two-byte literals are found from their first byte,
one-byte literals by a lookup of every byte.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A") : ord("Z") + 1] += 32
_NEWLINE = 10
Indexes = npt.NDArray[np.intp]
Bytes = npt.NDArray[np.uint8]


def newline_positions(block: bytes) -> Indexes:
    """Positions of the `\\n` bytes of a block."""
    return np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == _NEWLINE)


def _cases(byte: int) -> list[int]:
    return [byte, byte ^ 0x20] if chr(byte).isascii() and chr(byte).isalpha() else [byte]


def _pair_counts(block: bytes) -> npt.NDArray[np.intp]:
    """How often each lower-cased byte pair occurs in `block`, by little-endian word."""
    lower = block.lower()
    words = np.frombuffer(lower, dtype="<u2", count=len(lower) // 2)
    odd = np.frombuffer(lower, dtype="<u2", count=max(len(lower) - 1, 0) // 2, offset=min(len(lower), 1))
    return np.bincount(words, minlength=1 << 16) + np.bincount(odd, minlength=1 << 16)


class LiteralLines:
    """The line indexes of a block holding one of `literals` (matched as `block.lower()` would)."""

    def __init__(self, literals: Iterable[bytes]) -> None:
        needles = sorted({lit.lower() for lit in literals if lit})
        self._single = np.array([n[0] for n in needles if len(n) == 1], dtype=np.uint8)
        self._pairs = [n for n in needles if len(n) == 2]
        self._long = [n for n in needles if len(n) >= 3]
        self._table: Bytes | None = None  # word -> 1 where some literal is anchored (built on the first block)
        self._group: npt.NDArray[np.uint16] = np.zeros(1 << 16, dtype=np.uint16)
        self._members: list[list[tuple[int, bytes]]] = [[]]  # by group: (anchor offset, literal)
        self._entries: _Entries | None = None

    def find(self, block: bytes, newlines: Indexes | None = None) -> tuple[Indexes, Indexes]:
        """(sorted 0-based indexes of the matching lines, positions of the block's newlines)."""
        data = np.frombuffer(block, dtype=np.uint8)
        starts = [self._anchored(block, data)]
        starts.extend(_verify(data, _first_byte(data, p[0]), p, (0,)) for p in self._pairs)
        if self._single.size:
            starts.append(np.flatnonzero(np.isin(_LOWER.take(data), self._single)))
        if newlines is None:
            newlines = newline_positions(block)
        return np.unique(np.searchsorted(newlines, np.concatenate(starts))), newlines

    def _build(self, sample: bytes) -> tuple[Bytes, _Entries]:
        counts = _pair_counts(sample)
        by_anchor: dict[int, list[tuple[int, bytes]]] = {}
        for needle in self._long:
            for parity in (0, 1):
                offsets = range(parity, len(needle) - 1, 2)
                at = min(offsets, key=lambda i: (counts[needle[i + 1] << 8 | needle[i]], -i))
                by_anchor.setdefault(needle[at + 1] << 8 | needle[at], []).append((at, needle))
        table = np.zeros(1 << 16, dtype=np.uint8)
        for group, (word, members) in enumerate(sorted(by_anchor.items()), 1):
            for first in _cases(word & 0xFF):
                for second in _cases(word >> 8):
                    table[second << 8 | first] = 1
                    self._group[second << 8 | first] = group
            self._members.append(members)
        return table, _Entries(self._members)

    def _anchored(self, block: bytes, data: Bytes) -> Indexes:
        if not self._long or len(block) < 3:
            return np.empty(0, dtype=np.intp)
        if self._table is None or self._entries is None:
            self._table, self._entries = self._build(block)
        words = np.frombuffer(block, dtype="<u2", count=len(block) // 2)
        at = np.flatnonzero(self._table.take(words).view(bool))  # the table holds only 0 and 1
        if not at.size:
            return np.empty(0, dtype=np.intp)
        return self._entries.verify(data, at * 2, self._group.take(words.take(at)))


class _Entries:
    """The (anchor offset, literal) members of every anchor group as arrays, so that all the anchor hits of a
    block are verified at once, whatever their literals: one gather of each hit's bytes, one comparison."""

    def __init__(self, members: list[list[tuple[int, bytes]]]) -> None:
        flat = [entry for group in members for entry in group]
        width = max(len(needle) for _, needle in flat)
        self._first = np.cumsum([0] + [len(group) for group in members])[:-1]  # first entry of each group
        self._count = np.array([len(group) for group in members], dtype=np.intp)
        self._single = bool((self._count[1:] == 1).all())
        self._offset = np.array([offset for offset, _ in flat], dtype=np.intp)
        self._length = np.array([len(needle) for _, needle in flat], dtype=np.intp)
        self._bytes = np.zeros((len(flat), width), dtype=np.uint8)
        for row, (_, needle) in enumerate(flat):
            self._bytes[row, : len(needle)] = np.frombuffer(needle, dtype=np.uint8)
        self._unused = np.arange(width) >= self._length[:, None]  # bytes past each literal's end
        self._span = np.arange(width)
        # One byte beside each anchor pair, checked first: most anchor hits are common pairs (`er` of `err` is
        # in every `handler`) that this byte already rules out.
        self._probe = np.where(self._offset + 2 < self._length, self._offset + 2, self._offset - 1)
        self._probe_byte = self._bytes[np.arange(len(flat)), self._probe]

    def verify(self, data: Bytes, anchors: Indexes, groups: npt.NDArray[np.uint16]) -> Indexes:
        """Where a literal starts, given the positions of anchor words and their groups."""
        entries = self._first.take(groups)
        if not self._single:
            counts = self._count.take(groups)
            hit = np.repeat(np.arange(anchors.size), counts)
            within = np.arange(hit.size) - np.repeat(np.cumsum(counts) - counts, counts)
            anchors, entries = anchors.take(hit), entries.take(hit) + within
        starts = anchors - self._offset.take(entries)
        inside = (starts >= 0) & (starts + self._length.take(entries) <= len(data))
        starts, entries = starts[inside], entries[inside]
        probe = _LOWER.take(data.take(starts + self._probe.take(entries))) == self._probe_byte.take(entries)
        starts, entries = starts[probe], entries[probe]
        window = _LOWER.take(data.take(np.minimum(starts[:, None] + self._span, len(data) - 1)))
        same = (window == self._bytes.take(entries, axis=0)) | self._unused.take(entries, axis=0)
        found: npt.NDArray[np.intp] = starts[same.all(axis=1)]
        return found


def _first_byte(data: Bytes, byte: int) -> Indexes:
    """Positions of `byte` in any ASCII case."""
    cases = _cases(byte)
    mask = data == cases[0]
    for other in cases[1:]:
        mask |= data == other
    return np.flatnonzero(mask)


def _verify(data: Bytes, starts: Indexes, needle: bytes, known: tuple[int, ...]) -> Indexes:
    """The `starts` where all of `needle` occurs (its bytes at the `known` offsets are known to)."""
    kept = starts[(starts >= 0) & (starts + len(needle) <= len(data))]
    for offset, byte in enumerate(needle):
        if not kept.size:
            break
        if offset not in known:
            kept = kept[_LOWER.take(data.take(kept + offset)) == byte]
    return kept
