"""Unsupervised choice: the first strong error block inside the failing step, grown through its paragraph.

Tools print the cause first and its consequences after (summaries, `npm ERR!`, `make: ***`), and a CI
runner marks where the failing command ends; so the block chosen is the earliest one inside the first
failed step that scores close to that step's best, weighted towards the step's end. A failure the tool
reports again later with its details (the same test named in a longer block) is shown by that report.
Without a runner's step marks, "earliest" has no anchor (earlier commands print errors and go on): the
best block weighted towards the log's end is chosen and, as that guess is less sure, the log's last
lines are shown with it.
"""

from __future__ import annotations

import math
import re

from hummingbird_agent import budgets
from hummingbird_agent.logs.cues import cue_score
from hummingbird_agent.logs.select import Block, Shape, build_blocks, choose, end_prior, fit, line_shape
from hummingbird_agent.logs.steps import (
    BOUNDARY_SCORE,
    Step,
    extend,
    failing_step,
    is_routine,
    is_wrap_up,
    last_output,
    unstamped,
)
from hummingbird_agent.logs.stream import LogView

# A block needs this share of the step's best block score to be chosen over a later one.
_FIRST_SHARE = 0.3
# Extra weight of a block right before the step's end, decaying over this many lines.
_STEP_END_WEIGHT = 1.5
_STEP_END_SCALE = 30.0
# A shell-traced command (`+ cmd`, `set -x`) right before the error block: the command that failed, shown
# when the budget has room (an echoed `$ cmd` step line is not: it starts every step).
_COMMAND_ECHO = re.compile(r"^\++ ?\S")
# Names a failure report repeats: camel-case or dotted identifiers (`testThatUploadFails`,
# `Foo.Tests.BarCase`) and snake-case ones (`line_selection_works`).
_NAME = re.compile(r"(?<![\w.])[A-Za-z_][\w.:]*[a-z][A-Z_][\w.:]{5,}\w|\b[a-z]+_[a-z_]{6,}\b")
# A name of a kind of failure (`java.lang.RuntimeException`, `AssertionError`) names no test: other
# failures print it too.
_KIND = re.compile(r"(?:Exception|Error|Failure|Failed)$")
# A stack frame (`at pkg.Cls.run(Cls.java:12)`, `File "x.py", line 3`, `... 15 more`), even under a logger's
# `[error]` tag, details the exception line above it and is no evidence of its own: a long trace would
# otherwise outweigh the failure reports before it.
_FRAME = re.compile(r"\s*(?:\[\w+\]\s*)?(?:at [\w$.<>]+\(|File \"|\.\.\. \d+ more)")


def locate_in_step(view: LogView, max_lines: int, *, rescore: bool = False) -> list[tuple[int, int]]:
    """The ranges to output for an unsupervised excerpt of `view`.

    `rescore` when the view's hits were scored by other evidence: every kept line is then rated by
    its failure cues alone.
    """
    text = unstamped(view.text_of())
    evidence = _evidence(view, text, rescore)
    step = failing_step(text, view.total_lines)
    inside = {n: v for n, v in evidence.items() if step.first <= n < step.end}
    if step.found:
        # A complaint the earlier steps, which succeeded, printed too (a missing optional tool, a warning
        # every step repeats) is not what failed this one.
        inside = _new_in_step(text, evidence, step, inside)
    shape = Shape(distinct=True)
    blocks = build_blocks(inside, text, lambda last: _step_prior(step, last), shape)
    cap = min(max_lines, budgets.EXCERPT_PARAGRAPH_LINES)
    if not step.found and blocks:
        first, last = _grown(text, max(blocks, key=lambda b: (b.score, b.last)), step, cap, cap)
        # The log's last lines in the room the pick leaves: when cut, a tail keeps its end.
        room = min(budgets.EXCERPT_UNANCHORED_TAIL_LINES, max_lines - (last - first + 1))
        tail = [(max(1, view.total_lines - room + 1), view.total_lines)] if room > 0 else []
        return fit([(first, last)] + tail, max_lines)
    if blocks:
        return [_first_strong(text, blocks, step, max_lines, cap)]
    # No cue word inside the failing step (a size-limit report, a diff): its last output explains it.
    paragraph = last_output(text, step, cap) if step.found else None
    if paragraph is not None:
        return [paragraph]
    fallback = Shape(distinct=True)
    return choose(build_blocks(evidence, text, end_prior(view.total_lines, fallback), fallback), max_lines, fallback)


# An ASCII line without the characters `line_shape` may remove: lines of one shape have the same such text.
_HEXLESS = str.maketrans("", "", "0123456789abcdef")


def _new_in_step(
    text: dict[int, str], evidence: dict[int, float], step: Step, inside: dict[int, float]
) -> dict[int, float]:
    """The lines of `inside` whose shape no evidence line before the step has; only the earlier lines that
    could have one of those shapes are shaped (most are long and differ in more than numbers)."""
    shapes = {n: line_shape(text[n]) for n in inside}
    wanted = {shape.translate(_HEXLESS) for shape in shapes.values() if shape.isascii()}
    seen = {line_shape(line) for n in evidence if n < step.first
            if not (line := text[n]).isascii() or line.translate(_HEXLESS) in wanted}
    return {n: v for n, v in inside.items() if shapes[n] not in seen}


def _evidence(view: LogView, text: dict[int, str], rescore: bool) -> dict[int, float]:
    """Failure evidence by line; wrap-up and routine lines and stack frames are none."""
    if rescore:
        scores = {n: cue_score(line) for n, line in text.items()}
    else:
        scores = {n: v for region in view.regions for n, v in region.hits.items()}
        for n in range(view.tail_start, view.total_lines + 1):
            scores.setdefault(n, cue_score(text[n]))
    return {n: v for n, v in scores.items() if v > BOUNDARY_SCORE and _telling(text.get(n, ""))}


def _telling(line: str) -> bool:
    return not is_wrap_up(line) and not is_routine(line) and _FRAME.match(line) is None


def _step_prior(step: Step, last: int) -> float:
    return 1.0 + _STEP_END_WEIGHT * math.exp(-(step.end - last) / _STEP_END_SCALE)


def _first_strong(text: dict[int, str], blocks: list[Block], step: Step, max_lines: int, cap: int) -> tuple[int, int]:
    """The earliest block close to the step's best, or the later, longer report of the same failure."""
    best = max(b.score for b in blocks)
    pick = min((b for b in blocks if b.score >= _FIRST_SHARE * best), key=lambda b: b.first)
    chosen = _grown(text, pick, step, max_lines, cap)
    said = " ".join(text.get(n, "") for n in range(pick.first, pick.last + 1))
    names = {name for name in _NAME.findall(said) if not _KIND.search(name)}
    if not names:
        return chosen
    for later in sorted((b for b in blocks if b.first > chosen[1]), key=lambda b: b.first):
        report = " ".join(text.get(n, "") for n in range(later.first, later.last + 1))
        if any(name in report for name in names):
            detailed = _grown(text, later, step, max_lines, cap)
            return detailed if detailed[1] - detailed[0] > chosen[1] - chosen[0] else chosen
    return chosen


def _grown(text: dict[int, str], block: Block, step: Step, max_lines: int, cap: int) -> tuple[int, int]:
    """A block grown through its paragraph, with the line that leads it when the budget has room."""
    last = min(extend(text, block.first, block.last, step, cap), block.first + max_lines - 1)
    room = last - block.first + 1 < max_lines and block.first > step.first
    return (block.first - 1 if room and _leads(text.get(block.first - 1), text[block.first]) else block.first, last)


def _leads(above: str | None, head: str) -> bool:
    """Whether the line above a block starts it: the shell-traced command that failed, or the header of an
    indented report (a file name above its `  28:14  error  ...` lines, a test's name above its failure)."""
    if above is None or not above.strip() or is_wrap_up(above):
        return False
    return _COMMAND_ECHO.match(above) is not None or len(above) - len(above.lstrip()) < len(head) - len(head.lstrip())
