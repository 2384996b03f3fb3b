"""Heuristic reading of PanDA job logs (payload.stdout): a failed job's summary, and the structural
alignment of a failed log against a finished job's log of a similar task (where the failed run stopped
following the successful one's steps)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from hummingbird_agent import budgets

_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})")
# A step marker: a line announcing what the payload starts or runs next.
_MARKER = re.compile(r"(?i)\b(start(ing|ed)?|begin(ning)?|running|executing|step|stage|processing|"
                     r"initiali[sz]ing|finish(ed|ing)?|done|complete[d]?)\b")
_ERROR = re.compile(r"(?i)\b(error|exception|fatal|failed|failure|traceback|segmentation|killed|abort(ed)?)\b")
_VOLATILE = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?|0x[0-9a-f]+|\d+")


def _norm(line: str) -> str:
    return " ".join(_VOLATILE.sub("#", line).split()).lower()


def _stamp(line: str) -> datetime | None:
    match = _STAMP.search(line)
    if not match:
        return None
    try:
        return datetime.fromisoformat(match.group(1).replace(" ", "T"))
    except ValueError:
        return None


def markers(lines: list[str]) -> list[tuple[int, str]]:
    """(line index, normalised text) of every step-marker line."""
    return [(i, _norm(line)) for i, line in enumerate(lines) if _MARKER.search(line)]


def summarize(text: str) -> dict[str, Any]:
    """Markers seen, the last action and its timestamp, error lines, the last lines."""
    lines = text.splitlines()
    found = markers(lines)
    last = lines[found[-1][0]].strip() if found else ""
    stamps = [s for line in lines if (s := _stamp(line))]
    errors = [line.strip() for line in lines if _ERROR.search(line)]
    return {
        "lines": len(lines),
        "markers": [lines[i].strip()[:200] for i, _ in found][-budgets.PANDA_LOG_ERROR_LINES:],
        "last_action": last[:300],
        "last_timestamp": stamps[-1].isoformat() if stamps else None,
        "error_lines": list(dict.fromkeys(e[:300] for e in errors))[-budgets.PANDA_LOG_ERROR_LINES:],
        "tail": lines[-budgets.PANDA_LOG_TAIL_LINES:],
    }


def _duration(lines: list[str], start: int) -> float | None:
    """Seconds from the timestamp at or after `start` to the log's last timestamp."""
    first = next((s for line in lines[start:] if (s := _stamp(line))), None)
    last = next((s for line in reversed(lines) if (s := _stamp(line))), None)
    return (last - first).total_seconds() if first and last else None


def compare(failed: str, successful: str) -> dict[str, Any]:
    """Align the failed log's step markers with the successful log's: the suspected step is the last one
    both share before they diverge; `truncated` means the failed log simply stops where the successful one
    goes on. `expected_next` is what the successful run did after that point."""
    bad, good = failed.splitlines(), successful.splitlines()
    bad_steps, good_steps = markers(bad), markers(good)
    good_index = {text: n for n, (_, text) in reversed(list(enumerate(good_steps)))}
    matched = -1  # position in good_steps of the last failed marker that followed the successful order
    last_bad = -1
    for pos, (_, text) in enumerate(bad_steps):
        n = good_index.get(text)
        if n is None or n <= matched:
            break
        matched, last_bad = n, pos
    diverged_at = bad_steps[last_bad][0] if last_bad >= 0 else 0
    good_line = good_steps[matched][0] if matched >= 0 else 0
    suspected = bad[diverged_at].strip() if last_bad >= 0 else ""
    truncated = last_bad == len(bad_steps) - 1 and matched < len(good_steps) - 1
    return {
        "truncated": truncated,
        "suspected_step": suspected[:300],
        "step_duration_s": _duration(bad, diverged_at) if last_bad >= 0 else None,
        "steps_matched": last_bad + 1,
        "steps_in_successful_log": len(good_steps),
        "expected_next": good[good_line + 1: good_line + 1 + budgets.PANDA_LOG_DIVERGENCE_LINES],
        "failed_after_divergence": bad[diverged_at + 1:][: budgets.PANDA_LOG_TAIL_LINES],
        "failed_tail": bad[-budgets.PANDA_LOG_TAIL_LINES:],
    }
