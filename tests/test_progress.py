"""Progress of long CLI batches: a bar that log lines do not break, and timed plain lines off a terminal."""

from __future__ import annotations

import io
import logging

from hummingbird_agent.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_one_line_every_interval_with_rate_eta_and_failures() -> None:
    out, clock = io.StringIO(), Clock()
    progress = Progress(10, out, "populate", interval_s=5.0, clock=clock)
    for i in range(10):
        clock.now += 1.0
        progress.advance(failed=i == 3)
    progress.finish()
    lines = out.getvalue().splitlines()
    assert lines == [
        "populate: 1/10 done, 1.00/s, ETA 9s, 0 failed",
        "populate: 6/10 done, 1.00/s, ETA 4s, 1 failed",
        "populate: 10/10 done, 1.00/s, ETA 0s, 1 failed",
    ]
    assert "\r" not in out.getvalue()


def test_on_a_terminal_log_lines_go_above_the_bar() -> None:
    out, clock = Terminal(), Clock()
    progress = Progress(4, out, "analyze", clock=clock)
    logger = logging.getLogger("tests.progress")
    handler = logging.StreamHandler(progress.log_stream())  # type: ignore[arg-type]
    logger.addHandler(handler)
    logger.propagate = False
    try:
        clock.now += 2
        progress.advance()
        logger.warning("line 2 failed: model refused")
        clock.now += 2
        progress.advance(failed=True)
    finally:
        logger.removeHandler(handler)
    progress.finish()
    # What a terminal shows: every \r starts the line again, ESC[K clears it.
    screen: list[str] = []
    for raw in out.getvalue().split("\n"):
        screen.append(raw.split("\r")[-1].replace("\x1b[K", ""))
    assert screen[0] == "line 2 failed: model refused"
    assert screen[1].startswith("[###############...............] analyze: 2/4 done") and "1 failed" in screen[1]
    assert screen[2] == ""
