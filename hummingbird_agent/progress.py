"""Progress of a long CLI batch on stderr: a bar redrawn in place on a terminal (log lines are printed above
it, never through it), and off a terminal one plain line every few seconds: done/total, rate, ETA, failures."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from hummingbird_agent import budgets

_CLEAR = "\r\x1b[K"
BAR_WIDTH = 30


class Progress:
    """Counts done and failed items of a batch of `total` and reports them on `stream`."""

    def __init__(self, total: int, stream: TextIO, label: str,
                 interval_s: float = budgets.PROGRESS_LINE_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.label = total, label
        self.done = self.failed = 0
        self._stream, self._interval_s, self._clock = stream, interval_s, clock
        self.tty = stream.isatty()
        self._started = clock()
        self._last_line: float | None = None
        self._bar_shown = False
        self.finished = False

    def advance(self, failed: bool = False) -> None:
        self.done += 1
        self.failed += int(failed)
        if self.tty:
            self._draw()
            return
        now = self._clock()
        if self._last_line is None or now - self._last_line >= self._interval_s or self.done == self.total:
            self._stream.write(self.status() + "\n")
            self._stream.flush()
            self._last_line = now

    def finish(self) -> None:
        """End the bar's line (terminal); off a terminal the last line was printed by the last advance()."""
        self.finished = True
        if self.tty and self._bar_shown:
            self._stream.write("\n")
            self._stream.flush()
            self._bar_shown = False

    def status(self) -> str:
        elapsed = max(self._clock() - self._started, 1e-9)
        rate = self.done / elapsed
        remaining = self.total - self.done
        eta = _duration(remaining / rate) if self.done and remaining else ("0s" if not remaining else "?")
        return (f"{self.label}: {self.done}/{self.total} done, {rate:.2f}/s, ETA {eta}, "
                f"{self.failed} failed")

    def write_above(self, text: str) -> None:
        """Write `text` (a log line) so that the bar stays below it, whole."""
        self.above(lambda: self._stream.write(text), redraw=text.endswith("\n"))

    def above(self, write: Callable[[], object], redraw: bool = True) -> None:
        """Clear the bar, let `write` print (to this stream or stdout on the same terminal), redraw the bar."""
        shown = self.tty and self._bar_shown
        if shown:
            self._stream.write(_CLEAR)
            self._stream.flush()
        write()
        if shown and redraw:
            self._draw()
        self._stream.flush()

    def log_stream(self) -> BarAwareStream:
        """A stream for a logging handler: its lines go above the bar."""
        return BarAwareStream(self, self._stream)

    def _draw(self) -> None:
        filled = BAR_WIDTH * self.done // max(self.total, 1)
        self._stream.write(f"{_CLEAR}[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.status()}")
        self._stream.flush()
        self._bar_shown = True


class BarAwareStream:
    """What logging writes to while a bar is shown."""

    def __init__(self, progress: Progress, stream: TextIO) -> None:
        self._progress, self._stream = progress, stream

    def write(self, text: str) -> int:
        # After finish() (or from a later command in the same process) lines go to the current stderr.
        if self._progress.finished:
            sys.stderr.write(text)
        else:
            self._progress.write_above(text)
        return len(text)

    def flush(self) -> None:
        (sys.stderr if self._progress.finished else self._stream).flush()

    def isatty(self) -> bool:
        return self._stream.isatty()


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
