"""The `Excerpt` result, reading a log source block by block, and the numbered-text rendering."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from hummingbird_agent import budgets
from hummingbird_agent.logs.scan import Scanner
from hummingbird_agent.logs.stream import HitFinder, LogView, is_gzip, open_log, read_blocks

LogSource = str | os.PathLike[str] | Iterable[str]


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Selected line ranges (1-based, inclusive, raw-file numbering) and their cleaned text."""

    ranges: tuple[tuple[int, int], ...]
    lines: tuple[tuple[int, str], ...]
    total_lines: int
    mode: str

    def to_json(self) -> dict[str, object]:
        return {"ranges": [list(r) for r in self.ranges], "lines": self.total_lines}


def iter_blocks(source: LogSource) -> Iterator[bytes]:
    """Blocks of whole lines from a path (plain or gzip) or from an iterable of lines."""
    if isinstance(source, str | os.PathLike):
        with open_log(os.fspath(source)) as handle:
            yield from read_blocks(handle, budgets.EXCERPT_READ_BLOCK_BYTES)
        return
    batch: list[str] = []
    size = 0
    for line in source:
        line = line[:-1] if line.endswith("\n") else line
        batch.append(line)
        size += len(line) + 1
        if size >= budgets.EXCERPT_READ_BLOCK_BYTES:
            yield "\n".join(batch).encode("utf-8", "surrogateescape")
            batch, size = [], 0
    if batch:
        yield "\n".join(batch).encode("utf-8", "surrogateescape")


def scan(source: LogSource, finder: HitFinder, window: int = budgets.EXCERPT_WINDOW_LINES) -> LogView:
    """Run one streaming pass of `finder` over `source`."""
    path = os.fspath(source) if isinstance(source, str | os.PathLike) else None
    scanner = Scanner(finder, window, path if path is not None and not is_gzip(path) else None)
    for block in iter_blocks(source):
        scanner.feed(block)
    return scanner.view()


def assemble(view: LogView, ranges: Sequence[tuple[int, int]], mode: str) -> Excerpt:
    """Attach the text of the chosen ranges."""
    text = view.text_of()
    lines = tuple((n, text.get(n, "")) for first, last in ranges for n in range(first, last + 1))
    return Excerpt(tuple(ranges), lines, view.total_lines, mode)


def format_excerpt(excerpt: Excerpt) -> str:
    """Numbered text of an excerpt, `...` between ranges, e.g. for a spill preview."""
    if not excerpt.lines:
        return f"(no failure lines found in {excerpt.total_lines} lines)"
    width = len(str(excerpt.lines[-1][0]))
    out: list[str] = []
    previous = None
    for number, text in excerpt.lines:
        if previous is not None and number != previous + 1:
            out.append("...")
        out.append(f"{number:>{width}}: {text}")
        previous = number
    return "\n".join(out)
