"""The last lines of a log read as a stream: what the knowledge base's whole-log vector is computed from."""

from __future__ import annotations

from collections import deque

from hummingbird_agent import budgets


class LogTail:
    """The last lines of a log read as a stream, up to `limit` characters (each line cut like a symptom):
    what `log_text` reads when the whole log is not kept."""

    def __init__(self, limit: int = budgets.BAMBOO_LOG_TAIL_CHARS) -> None:
        self._lines: deque[str] = deque()
        self._size, self._limit = 0, limit

    def add(self, line: str) -> None:
        line = line[: budgets.BAMBOO_SYMPTOM_MAX_CHARS]
        self._lines.append(line)
        self._size += len(line) + 1
        while self._size > self._limit:
            self._size -= len(self._lines.popleft()) + 1

    def text(self) -> str:
        return "\n".join(self._lines)
