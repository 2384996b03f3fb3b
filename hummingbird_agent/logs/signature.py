"""Signatures of log lines: volatile tokens (times, durations, hashes, temp paths, ids, numbers) masked.

Two runs of the same job print the same signature for the same event; the knowledge base names
Symptoms by it and the passing-run diff compares by it.
"""

from __future__ import annotations

import re

from hummingbird_agent.logs.clean import clean_line

# Order matters: the specific shapes are masked before the generic number rule eats their parts.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # ISO-8601 / RFC 3339 / syslog-ish timestamps, with optional fraction and zone.
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"), "<TS>"),
    (re.compile(r"\b\d{1,2}:\d\d:\d\d(?:[.,]\d+)?\b"), "<TIME>"),
    (re.compile(r"\b\d{4}[-/.]\d\d[-/.]\d\d\b"), "<DATE>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<UUID>"),
    # Temporary paths keep their meaning (a temp file) but lose the random part.
    (re.compile(r"(?:/tmp|/var/folders|/private/var|[A-Za-z]:\\Temp|/builds/tmp)[^\s'\":,;)\]]*"), "<TMP>"),
    # Commit ids, digests, object addresses: hex runs of 7+ with at least one digit and one letter.
    (re.compile(r"\b(?:0x)?(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b", re.I), "<HEX>"),
    # A test's duration in brackets is left out: jest, mocha and node's spec reporter print it only past a
    # threshold, so one run prints `✕ loads (1 ms)` where the next prints `✕ loads`.
    (re.compile(r" ?\(\d+(?:\.\d+)? ?(?:ms|s)\)"), ""),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|min|mins|minutes|h|µs|us|ns)\b"), "<DUR>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:[KMGT]i?B|kB|bytes|B)\b"), "<SIZE>"),
    (re.compile(r"\d+(?:\.\d+)?%"), "<PCT>"),
    (re.compile(r"\d+"), "<N>"),
)
_SPACES = re.compile(r"\s+")


def signature(line: str) -> str:
    """Return `line` cleaned (ANSI, CR, folding markers) with its volatile tokens masked.

    The result is stable across runs of the same job: `"Took 1.2s at 2024-01-02T03:04:05Z"` and
    `"Took 13 s at 2025-06-07T08:09:10Z"` both become `"Took <DUR> at <TS>"`.
    """
    text = clean_line(line)
    for pattern, placeholder in _RULES:
        text = pattern.sub(placeholder, text)
    return _SPACES.sub(" ", text).strip()
