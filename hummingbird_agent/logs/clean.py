"""Line cleaning for build logs: ANSI escapes, CR-overwritten progress lines, CI folding markers.

Only the lines the localiser looks at are cleaned, one at a time; line numbers always stay those of
the raw file because a line is never split or joined.
"""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves, `\e[0K`), OSC sequences (titles, hyperlinks) and the
# two-byte escapes some tools emit (`\e=`, `\e>`).
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_=>])")
# `_ANSI` over many lines joined by `\n`: an OSC sequence also ends at the end of its line.
_ANSI_LINES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[@-Z\\-_=>])")
# GitLab collapsible-section markers: `section_start:<epoch>:<name>[opts]\r` and `section_end:...`.
_SECTION = re.compile(r"section_(?:start|end):\d+:[A-Za-z0-9_.\-]+(?:\[[^\]\r\n]*\])?\r?")


def clean_line(line: str) -> str:
    """Return one line (without its `\\n`) as a terminal shows it, trailing blanks removed."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "section_" in line:
        line = _SECTION.sub("", line)
    if "\r" in line:
        line = _shown(line)
    return line.rstrip()


def _shown(line: str) -> str:
    # A terminal shows only what follows the last CR that has text after it (progress bars);
    # `\r\n` and `\r\r\n` endings leave trailing CRs, which carry nothing.
    parts = [p for p in line.split("\r") if p.strip()]
    return parts[-1] if parts else ""


def decode_clean(raw: bytes) -> str:
    """Decode one raw line (undecodable bytes become U+FFFD) and clean it."""
    return clean_line(raw.decode("utf-8", "replace"))


def decode_clean_lines(raw: bytes, width: int | None = None) -> list[str]:
    """`decode_clean` of each line of `raw` (lines joined by `\n`), decoded and cleaned together: a `\n` never
    belongs to a UTF-8 sequence, so each line decodes as it would alone, and no escape or marker the
    patterns remove spans a `\n` (`_ANSI_LINES` ends an unterminated OSC sequence at its line's end). With
    `width`, each line is cut to that many characters."""
    text = raw.decode("utf-8", "replace")
    if "\x1b" in text:
        text = _ANSI_LINES.sub("", text)
    if "section_" in text:
        text = _SECTION.sub("", text)
    if "\r" not in text:
        return [line.rstrip()[:width] for line in text.split("\n")]
    return [(_shown(line) if "\r" in line else line).rstrip()[:width] for line in text.split("\n")]
