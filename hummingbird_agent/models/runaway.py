"""A runaway answer: the same line or block of lines repeated in a row, as a small model loops. Pure and bounded:
fed the streamed text piece by piece, it keeps only the hashes of the last lines and the current line."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from hummingbird_agent import budgets


@dataclass(frozen=True, slots=True)
class Runaway:
    """A loop found in the stream."""

    keep_chars: int
    """Characters of the text to keep: up to the end of the block's first copy."""
    block_lines: int
    """Lines of the repeated block (blank lines not counted)."""
    times: int
    """Copies of it seen in a row."""

    def notice(self) -> str:
        """The sentence put after the kept text: the answer says it was cut."""
        block = "line" if self.block_lines == 1 else f"block of {self.block_lines} lines"
        return (f"[Hummingbird stopped this answer: the model wrote the same {block} {self.times} times in a row; "
                "what came before the repeats is kept.]")


@dataclass(frozen=True, slots=True)
class RepeatLimits:
    """When a stream counts as looping (blank lines are not counted)."""

    min_times: int = budgets.MODEL_REPEAT_MIN_TIMES
    """Copies of a block in a row that make a loop."""
    max_block_lines: int = budgets.MODEL_REPEAT_MAX_BLOCK_LINES
    """The longest block looked for, in non-blank lines."""
    line_max_chars: int = budgets.MODEL_REPEAT_LINE_MAX_CHARS
    """A longer line is cut into lines of this length."""


class RepetitionGuard:
    """`feed(text)` each streamed piece; it returns a Runaway once the text loops, else None."""

    def __init__(self, limits: RepeatLimits | None = None) -> None:
        self.limits = limits or RepeatLimits()
        # (hash of the line, offset of the end of the line) of the last non-blank lines
        self._lines: deque[tuple[int, int]] = deque(maxlen=self.limits.min_times * self.limits.max_block_lines)
        self._line = ""
        self._fed = 0

    def feed(self, text: str) -> Runaway | None:
        for piece in text.splitlines(keepends=True):
            self._line += piece
            self._fed += len(piece)
            if len(self._line) > self.limits.line_max_chars:
                # A line without end: count a fixed-size slice of it, so memory stays bounded.
                cut = self._line[:self.limits.line_max_chars]
                self._line = self._line[self.limits.line_max_chars:]
                found = self._end_line(cut, self._fed - len(self._line))
            elif piece.endswith(("\n", "\r")):
                found = self._end_line(self._line, self._fed)
                self._line = ""
            else:
                continue
            if found is not None:
                return found
        return None

    def _end_line(self, line: str, end: int) -> Runaway | None:
        if not line.strip():
            return None
        self._lines.append((hash(line.rstrip()), end))
        return self._loop()

    def _loop(self) -> Runaway | None:
        lines = list(self._lines)
        times = self.limits.min_times
        for size in range(1, self.limits.max_block_lines + 1):
            if len(lines) < size * times:
                break
            tail = lines[-size * times:]
            block = [h for h, _ in tail[:size]]
            if all(tail[i][0] == block[i % size] for i in range(len(tail))):
                return Runaway(keep_chars=tail[size - 1][1], block_lines=size, times=times)
        return None
