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

    def _build(self, sample: bytes) -> Bytes:
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
        return table

    def _anchored(self, block: bytes, data: Bytes) -> Indexes:
        if not self._long or len(block) < 3:
            return np.empty(0, dtype=np.intp)
        if self._table is None:
            self._table = self._build(block)
        words = np.frombuffer(block, dtype="<u2", count=len(block) // 2)
        at = np.flatnonzero(self._table.take(words).view(bool))  # the table holds only 0 and 1
        if not at.size:
            return np.empty(0, dtype=np.intp)
        groups = self._group.take(words.take(at))
        matches: list[Indexes] = []
        for group in np.unique(groups).tolist():
            positions = at[groups == group] * 2
            matches.extend(_verify(data, positions - offset, needle, (offset, offset + 1))
                for offset, needle in self._members[group])
        return np.concatenate(matches)


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
