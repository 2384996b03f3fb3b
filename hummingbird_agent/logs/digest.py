"""A whole log's digest with its volatile parts masked: two logs with the same digest printed the same lines in
the same order, numbers and ids aside (another run of the same job that did exactly the same), GitLab Runner's own
lines and section markers aside (another runner, ref or commit runs the same job)."""

from __future__ import annotations

import hashlib
import re

from hummingbird_agent.logs.clean import clean_line
from hummingbird_agent.logs.runner_text import is_runner_line

# What differs between two runs doing the same: hex ids (commits, containers) and every number (times, sizes, ids).
_VOLATILE = re.compile(r"\b[0-9a-f]{7,64}\b|\d+")


class LogDigest:
    """Fed line by line as a log streams; `hexdigest` once it is read."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.lines = 0

    def add(self, line: str) -> None:
        shown = clean_line(line)
        if shown.strip() and not is_runner_line(shown):
            self._hash.update(_VOLATILE.sub("N", shown.strip()).encode("utf-8", "replace") + b"\n")
            self.lines += 1

    def hexdigest(self) -> str:
        return self._hash.hexdigest()
