"""Lines of a block that hold any of a set of literals (ASCII case-insensitive), found in one vectorised pass.

Every literal's first two bytes (in any ASCII case) index one table, looked up at all positions at once; the
few candidate positions are checked byte by byte for the rest of their literals. A block then costs a few
passes of numpy over it, however many literals there are (a `bytes.find` per literal cost one pass each).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A") : ord("Z") + 1] += 32
_NEWLINE = 10
Indexes = npt.NDArray[np.intp]


def _cases(byte: int) -> set[int]:
    return {byte, byte ^ 0x20} if chr(byte).isascii() and chr(byte).isalpha() else {byte}


class LiteralLines:
    """The line indexes of a block holding one of `literals` (matched as `block.lower()` would)."""

    def __init__(self, literals: Iterable[bytes]) -> None:
        needles = sorted({lit.lower() for lit in literals if lit})
        self._single = np.array([n[0] for n in needles if len(n) == 1], dtype=np.uint8)
        by_prefix: dict[bytes, list[bytes]] = {}
        for needle in needles:
            if len(needle) >= 2:
                by_prefix.setdefault(needle[:2], []).append(needle[2:])
        # Group 0 means "no literal starts here"; group g > 0 lists the rests of the literals with that prefix.
        self._table = np.zeros(1 << 16, dtype=np.uint16)
        self._rests: list[list[bytes]] = [[]]
        for group, (prefix, rests) in enumerate(sorted(by_prefix.items()), 1):
            for first in _cases(prefix[0]):
                for second in _cases(prefix[1]):
                    self._table[second << 8 | first] = group  # little-endian words: second byte high
            self._rests.append(rests)

    def find(self, block: bytes) -> tuple[Indexes, Indexes]:
        """(sorted 0-based indexes of the matching lines, positions of the block's newlines)."""
        data = np.frombuffer(block, dtype=np.uint8)
        starts = [self._pair_matches(block, data)]
        if self._single.size:
            starts.append(np.flatnonzero(np.isin(_LOWER[data], self._single)))
        newlines = np.flatnonzero(data == _NEWLINE)
        found = np.concatenate(starts)
        return np.unique(np.searchsorted(newlines, found)), newlines

    def _pair_matches(self, block: bytes, data: npt.NDArray[np.uint8]) -> Indexes:
        size = len(block)
        if size < 2:
            return np.empty(0, dtype=np.intp)
        # 16-bit words at even and at odd offsets: every byte pair, without a copy.
        even = self._table[np.frombuffer(block, dtype="<u2", count=size // 2)]
        odd = self._table[np.frombuffer(block, dtype="<u2", count=(size - 1) // 2, offset=1)]
        at_even, at_odd = np.flatnonzero(even), np.flatnonzero(odd)
        positions = np.concatenate((at_even * 2, at_odd * 2 + 1))
        groups = np.concatenate((even[at_even], odd[at_odd]))
        matches = []
        for group in np.unique(groups).tolist():
            candidates = positions[groups == group]
            for rest in self._rests[group]:
                matches.append(_extend(data, candidates, rest))
        return np.concatenate(matches) if matches else np.empty(0, dtype=np.intp)


def _extend(data: npt.NDArray[np.uint8], candidates: Indexes, rest: bytes) -> Indexes:
    """The candidates (positions of a literal's first two bytes) followed by `rest`."""
    kept = candidates
    for offset, byte in enumerate(rest, 2):
        kept = kept[kept + offset < len(data)]
        kept = kept[_LOWER[data[kept + offset]] == byte]
        if not kept.size:
            break
    return kept
