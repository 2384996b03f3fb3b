"""Text lines of a byte stream (a job log as GitLab streams it), one chunk in memory at a time."""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator


def iter_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Text lines of a byte stream (invalid UTF-8 replaced), one chunk in memory at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    rest = ""
    for chunk in chunks:
        *lines, rest = (rest + decoder.decode(chunk)).split("\n")
        yield from lines
    tail = rest + decoder.decode(b"", final=True)
    if tail:
        yield tail
