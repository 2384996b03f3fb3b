"""Unsupervised choice: the first strong error block inside the failing step, grown through its paragraph.

Tools print the cause first and its consequences after (summaries, `npm ERR!`, `make: ***`), and a CI
runner marks where the failing command ends; so the block chosen is the earliest one inside the first
failed step that scores close to that step's best, weighted towards the step's end.
"""

from __future__ import annotations

import math
import re

from hummingbird_agent import budgets
from hummingbird_agent.logs.cues import cue_score
from hummingbird_agent.logs.select import Shape, build_blocks, choose, end_prior
from hummingbird_agent.logs.steps import BOUNDARY_SCORE, extend, failing_step, is_routine, is_wrap_up, last_output
from hummingbird_agent.logs.stream import LogView

# A block needs this share of the step's best block score to be chosen over a later one.
_FIRST_SHARE = 0.3
# Extra weight of a block right before the step's end, decaying over this many lines.
_STEP_END_WEIGHT = 1.5
_STEP_END_SCALE = 30.0
# A shell-traced command (`+ cmd`, `set -x`) right before the error block: the command that failed, shown
# when the budget has room (an echoed `$ cmd` step line is not: it starts every step).
_COMMAND_ECHO = re.compile(r"^\++ ?\S")


def locate_in_step(view: LogView, max_lines: int, *, rescore: bool = False) -> list[tuple[int, int]]:
    """The ranges to output for an unsupervised excerpt of `view`.

    `rescore` when the view's hits were scored by other evidence: every kept line is then rated by
    its failure cues alone.
    """
    text = view.text_of()
    if rescore:
        scores = {n: cue_score(line) for n, line in text.items()}
    else:
        scores = {n: v for region in view.regions for n, v in region.hits.items()}
        for n in range(view.tail_start, view.total_lines + 1):
            scores.setdefault(n, cue_score(text[n]))
    evidence = {
        n: v for n, v in scores.items()
        if v > BOUNDARY_SCORE and not is_wrap_up(text.get(n, "")) and not is_routine(text.get(n, ""))
    }
    step = failing_step(text, view.total_lines)
    inside = {n: v for n, v in evidence.items() if step.first <= n < step.end}
    shape = Shape()
    blocks = build_blocks(
        inside, text, lambda last: 1.0 + _STEP_END_WEIGHT * math.exp(-(step.end - last) / _STEP_END_SCALE), shape
    )
    cap = min(max_lines, budgets.EXCERPT_PARAGRAPH_LINES)
    if blocks:
        best = max(b.score for b in blocks)
        pick = min((b for b in blocks if b.score >= _FIRST_SHARE * best), key=lambda b: b.first)
        last = min(extend(text, pick.first, pick.last, step, cap), pick.first + max_lines - 1)
        traced = last - pick.first + 1 < max_lines and _COMMAND_ECHO.match(text.get(pick.first - 1, ""))
        return [(pick.first - 1 if traced else pick.first, last)]
    if step.found:
        # No cue word inside the failing step (a size-limit report, a diff): its last output explains it.
        paragraph = last_output(text, step, cap)
        if paragraph is not None:
            return [paragraph]
    fallback = Shape()
    blocks = build_blocks(evidence, text, end_prior(view.total_lines, fallback), fallback)
    return choose(blocks, max_lines, fallback)
