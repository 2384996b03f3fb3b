"""Line cleaning for build logs: ANSI escapes, CR-overwritten progress lines, CI folding markers.

Only the lines the localiser looks at are cleaned, one at a time; line numbers always stay those of
the raw file because a line is never split or joined.
"""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves, `\e[0K`), OSC sequences (titles, hyperlinks) and the
# two-byte escapes some tools emit (`\e=`, `\e>`).
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_=>])")
# GitLab collapsible-section markers: `section_start:<epoch>:<name>[opts]\r` and `section_end:...`.
_SECTION = re.compile(r"section_(?:start|end):\d+:[A-Za-z0-9_.\-]+(?:\[[^\]\r\n]*\])?\r?")


def clean_line(line: str) -> str:
    """Return one line (without its `\\n`) as a terminal shows it, trailing blanks removed."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "section_" in line:
        line = _SECTION.sub("", line)
    if "\r" in line:
        # A terminal shows only what follows the last CR that has text after it (progress bars);
        # `\r\n` and `\r\r\n` endings leave trailing CRs, which carry nothing.
        parts = [p for p in line.split("\r") if p.strip()]
        line = parts[-1] if parts else ""
    return line.rstrip()


def decode_clean(raw: bytes) -> str:
    """Decode one raw line (undecodable bytes become U+FFFD) and clean it."""
    return clean_line(raw.decode("utf-8", "replace"))


def decode_clean_lines(raw: bytes) -> list[str]:
    """`decode_clean` of each line of `raw` (lines joined by `\n`), decoded in one call: a `\n` never belongs
    to a UTF-8 sequence, so each line decodes as it would alone."""
    return [clean_line(line) for line in raw.decode("utf-8", "replace").split("\n")]
