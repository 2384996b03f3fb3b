"""Steps of a CI log: where the failing command ends, and the runner/tool wrap-up lines that follow a failure.

A runner's `The command "..." exited with 1` (or `ERROR: Job failed`) ends the failing step; the
explanation is the error output inside that step, not the wrap-up lines around its end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The end of a command (any exit status; group 1 or 2 holds it when printed). A retried command's first
# failed attempt (`failed. Retrying, 2 of 3`) ends the step: later attempts repeat it.
_STEP_END = re.compile(
    r"exited with (\d+)\.?\s*$|failed \d+ times\.?$|failed\. Retrying, \d+ of \d+|^ERROR: Job failed"
    r"|Process completed with exit code (\d+)"
)
# What tools and runners print after a failure: consequences and advice, never the explanation.
_WRAP_UP = re.compile(
    # npm's own advice lines only: `npm ERR! code ETIMEDOUT` and its message are the explanation.
    r"^(?:npm ERR! (?:A complete log|Failed at the|This is probably not|Test failed|.*See above|errno"
    r"|code ELIFECYCLE|\s+/|\S+@\S+ \S+: )"
    r"|error Command failed with exit code|info Visit https?://"
    r"|make(?:\[\d+\])?: (?:\*\*\*|Leaving|Entering)"
    r"|ERROR: \".*\" exited with|The command \".*\"|travis_(?:time|fold)|Done\. Your build exited|ERROR: Job failed"
    r"|Cleaning up|Uploading artifacts|store build cache|\(See full trace|Exited with code|Error: Process completed"
    r"|\[ERROR\] (?:Failed to execute goal|-> \[Help|To see the full|Re-run Maven|For more information|$)"
    r"|FAILURE: Build failed with an exception|BUILD FAILED|\* Try:|Run with --(?:stacktrace|info|debug|scan)"
    r"|ninja: build stopped|Makefile:\d+: recipe for target|script returned exit code"
    r"|An error occurred when executing task|Error: One or more errors occurred|\S+ exited with \d+\.?$"
    r"|error: aborting due to|error: [Cc]ould not compile|warning: build failed|error: build failed"
    r"|To learn more, run the command again with --verbose|For more information about this error)"
    r"|Process exited with code|returned non-zero exit status|Command exited with non-zero status"
)
# Lines reporting success or routine progress, whatever words they contain (a passing test named
# `test_error_page`, the package `libgpg-error-dev` being unpacked, a deprecation notice, a test
# skipped because `cvs not found`, a progress line ending in `[ 72%]` whose failure a later section details).
_ROUTINE = re.compile(
    r"\bPASS(?:ED)?\b|[✓✔]|\bok\b|\bskipped\b|\[\s*\d+%\]\s*$"
    r"|^\s*(?:Unpacking|Selecting|Preparing to|Setting up|Get:\d|Download|Install|Collecting|Requirement)|^>|deprecat",
    re.IGNORECASE,
)
# A runner's prefix on every line: a timestamp (GitHub Actions, GitLab's timestamps, Jenkins' timestamper),
# after at most two tab-separated columns (the job's and the step's names of a downloaded GitHub log) and
# before GitLab's stream tag (`01O`). The rules read a line after it: a blank output line is then blank.
_STAMP = re.compile(
    r"^(?:[^\t]*\t){0,2}\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]? ?(?:\d\d[OE]\+? )?"
)
# Kept lines looked at to decide whether a log is stamped, and the share of them that must carry a stamp: a
# runner stamps every line, while a tool's own log lines (`2024-05-01T12:00:00Z [INFO] ...`) are a few.
_STAMP_SAMPLE = 50
_STAMPED_SHARE = 0.9
# Score of a step boundary line, so the streaming scan keeps it (and the lines around it) in view.
BOUNDARY_SCORE = 0.01
BOUNDARY_LITERALS: tuple[bytes, ...] = (b"$ ",)


@dataclass(frozen=True, slots=True)
class Step:
    """The failing step: its first line and its end-marker line (1-based); `found` when a runner marked it."""

    first: int
    end: int
    found: bool


def boundary_score(line: str) -> float:
    """BOUNDARY_SCORE for an echoed command (`$ make`) or a command's end, else 0."""
    return BOUNDARY_SCORE if line.startswith("$ ") or (_may_end_step(line) and _STEP_END.search(line)) else 0.0


def is_wrap_up(line: str) -> bool:
    return _WRAP_UP.search(line) is not None


# A build tool's progress line (`   Compiling quick-error v1.2`, `[3 of 9] Compiling Foo.Error`): what is
# being built, not what failed, whatever its name contains.
_PROGRESS = re.compile(r"(?:^|[\]>]) *(?:Compiling|Configuring|Building|Linking) ")


# `_ROUTINE` for an ASCII line once lower-cased (ignoring ASCII case is lowering), split in two: its branches
# anchored at the start, and the others, each starting with a literal so that the search skips in C the
# positions no branch can start at (`\b` before a word is a look-behind after its first letter).
_ROUTINE_LOWER = re.compile(r"p(?<!\wp)ass(?:ed)?\b|o(?<!\wo)k\b|s(?<!\ws)kipped\b|\[\s*\d+%\]\s*$|deprecat")
_ROUTINE_LOWER_START = re.compile(
    r"\s*(?:unpacking|selecting|preparing to|setting up|get:\d|download|install|collecting|requirement)|>"
)


def is_routine(line: str) -> bool:
    if line.isascii():
        low = line.lower()
        if _ROUTINE_LOWER.search(low) is not None or _ROUTINE_LOWER_START.match(low) is not None:
            return True
    elif _ROUTINE.search(line) is not None:
        return True
    return _may_progress(line) and _PROGRESS.search(line) is not None


def _may_progress(line: str) -> bool:
    """Whether `line` holds a word every `_PROGRESS` match holds."""
    return "Compiling " in line or "Building " in line or "Linking " in line or "Configuring " in line


def failing_step(text: dict[int, str], total: int) -> Step:
    """The first failed step among the known lines (the root cause; later steps often fail because of it)."""
    bounds: list[int] = []
    for n in sorted(text):
        line = text[n]
        if line.startswith("$ "):
            bounds.append(n - 1)
            continue
        match = _STEP_END.search(line) if _may_end_step(line) else None
        if match is None:
            continue
        code = match.group(1) or match.group(2)
        if code is None or code != "0":
            first = bounds[-1] + 1 if bounds else 1
            return Step(first, _command_line(text, first, n), True)
        bounds.append(n)
    return Step(1, total + 1, False)


def _may_end_step(line: str) -> bool:
    """Whether `line` holds a word every `_STEP_END` match holds: most kept lines are rejected at C speed."""
    return "failed" in line or "exited with" in line or "Process completed" in line


def _command_line(text: dict[int, str], first: int, end: int) -> int:
    """A multi-line command is echoed back in its end marker: the step ends where that echo starts."""
    if text[end].startswith("The command"):
        return end
    for n in range(end - 1, max(first - 1, end - 40), -1):
        if text.get(n, "").startswith('The command "'):
            return n
    return end


def last_output(text: dict[int, str], step: Step, limit: int) -> tuple[int, int] | None:
    """The last paragraph of output before the step's end, wrap-up lines skipped (at most `limit` lines)."""
    n = step.end - 1
    while n >= step.first and n in text and _skippable(text[n]):
        n -= 1
    if n < step.first or n not in text:
        return None
    last = n
    while n - 1 >= step.first and _plain(text.get(n - 1)) and last - n + 1 < limit:
        n -= 1
    return n, last


def extend(text: dict[int, str], first: int, last: int, step: Step, limit: int) -> int:
    """Grow a block through the rest of its paragraph (to `limit` lines): details follow the error line."""
    while last + 1 < step.end and last - first + 1 < limit:
        following = text.get(last + 1)
        if following is not None and not following.strip() and _plain(text.get(last + 2)):
            # A lone count line (`1 failing`) is followed, after a blank line, by the failures it counts; a
            # header (`FAIL file`, `● test`) by its details, indented deeper than the header.
            if first == last or _indent(text[last + 2]) > _indent(text[first]):
                last += 1
                continue
        if not _plain(following) or is_routine(text[last + 1]):
            break
        last += 1
    return last


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _skippable(line: str) -> bool:
    return not line.strip() or line.startswith("travis_") or is_wrap_up(line)


def _plain(line: str | None) -> bool:
    return line is not None and bool(line.strip()) and not is_wrap_up(line)


def unstamped(text: dict[int, str]) -> dict[int, str]:
    """The lines without the runner's timestamp prefix when the log stamps its lines, else `text` itself."""
    sample = [line for _, line in zip(range(_STAMP_SAMPLE), text.values(), strict=False) if line]
    if not sample or sum(_STAMP.match(line) is not None for line in sample) < _STAMPED_SHARE * len(sample):
        return text
    return {n: _STAMP.sub("", line, count=1) for n, line in text.items()}
