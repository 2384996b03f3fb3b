"""Spill preview of a streamed job log: the failure excerpt with the whole log's line numbers, from a
bounded view (every line counted, only the last window of bytes kept) taken while the log streams by."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from hummingbird_agent import budgets
from hummingbird_agent.logs import Excerpt, excerpt_lines, format_excerpt


class LogTail:
    """Counts a log's lines and keeps its last `window_bytes` (at least); `preview()` localises the failure
    in that window and numbers the lines as in the whole log."""

    def __init__(self, window_bytes: int = budgets.JOB_LOG_PREVIEW_WINDOW_BYTES) -> None:
        self._window_bytes = window_bytes
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._lines_dropped = 0  # `\n`s in the chunks no longer kept
        self._cut_mid_line = False  # the first kept byte is not the start of a line

    def tee(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """Pass `chunks` through, keeping the view."""
        for chunk in chunks:
            self.add(chunk)
            yield chunk

    def add(self, chunk: bytes) -> None:
        if not chunk:
            return
        self._chunks.append(chunk)
        self._size += len(chunk)
        while self._size - len(self._chunks[0]) >= self._window_bytes:
            dropped = self._chunks.popleft()
            self._size -= len(dropped)
            self._lines_dropped += dropped.count(b"\n")
            self._cut_mid_line = not dropped.endswith(b"\n")

    def excerpt(self) -> Excerpt:
        """The failure excerpt of the kept window, its line numbers shifted to count the whole log."""
        data = b"".join(self._chunks)
        offset = self._lines_dropped
        if self._cut_mid_line:  # the window starts inside a line: skip its rest, it is counted
            data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
            offset += 1
        lines = data.decode("utf-8", errors="replace").split("\n")
        if data.endswith(b"\n"):
            lines.pop()  # the `\n` ends the last line; it starts no new one
        found = excerpt_lines(lines)
        return Excerpt(
            tuple((a + offset, b + offset) for a, b in found.ranges),
            tuple((n + offset, text) for n, text in found.lines),
            found.total_lines + offset,
            found.mode,
        )

    def preview(self) -> str | None:
        """Numbered excerpt text, or None when no line was selected (the caller keeps head and tail)."""
        found = self.excerpt()
        return format_excerpt(found) if found.lines else None
