"""The three localisation modes (general cues, examples, passing run) and `excerpt_lines`."""

from __future__ import annotations

from collections.abc import Sequence

from hummingbird_agent import budgets
from hummingbird_agent.logs.chunks import WEAK_SCORE, Chunk, find_chunks, only_wrap_up, widen
from hummingbird_agent.logs.cues import CUE_LITERALS, cached_cue_score, cue_score
from hummingbird_agent.logs.diff import diff_finder, passing_signatures
from hummingbird_agent.logs.excerpt import Excerpt, LogSource, assemble, iter_blocks, scan
from hummingbird_agent.logs.learn import Example, example_score, learn
from hummingbird_agent.logs.scan import literal_finder, shape_finder
from hummingbird_agent.logs.select import Shape, build_blocks, choose, end_prior, fit
from hummingbird_agent.logs.steps import BOUNDARY_LITERALS, boundary_score, failing_step
from hummingbird_agent.logs.stream import HitFinder, LogView
from hummingbird_agent.logs.unsupervised import locate_in_step


def unsupervised_finder() -> HitFinder:
    """Cue lines, plus step boundaries (echoed commands, command ends) at a token score so they stay in view."""
    cache: dict[str, float] = {}
    return shape_finder(
        CUE_LITERALS + BOUNDARY_LITERALS, lambda line: cached_cue_score(cache, line) or boundary_score(line)
    )


def excerpt_unsupervised(source: LogSource, max_lines: int) -> Excerpt:
    view = scan(source, unsupervised_finder())
    return assemble(view, locate_in_step(view, max_lines), "cues")


def excerpt_examples(source: LogSource, examples: Sequence[Example], max_lines: int) -> Excerpt:
    profile = learn(examples)
    finder = literal_finder(
        profile.literals + CUE_LITERALS + BOUNDARY_LITERALS,
        lambda line: example_score(profile, line) + cue_score(line) or boundary_score(line),
    )
    view = scan(source, finder)
    text = view.text_of()
    chunks = find_chunks(text, view.total_lines, examples, max_lines)
    if chunks:
        return assemble(view, _example_ranges(view, text, chunks[0], examples, max_lines), "examples")
    # Nothing in this log resembles the examples (a new kind of failure): general evidence decides,
    # at the examples' length.
    return assemble(view, fit(_step_pick(view, text, _longest(examples, max_lines), max_lines), max_lines), "examples")


def _example_ranges(
    view: LogView, text: dict[int, str], best: Chunk, examples: Sequence[Example], max_lines: int
) -> list[tuple[int, int]]:
    """The best chunk widened to the longest example's length; the failing-step pick added when in doubt.

    Doubt: the chunk resembles the examples weakly, lies outside the failing step, or is only
    wrap-up lines; then both are output (the chunk first when the budget is short).
    """
    longest = _longest(examples, max_lines)
    ranges = [(best.first, widen(text, best.first, best.last, longest))]
    step = failing_step(text, view.total_lines)
    outside = step.found and not step.first <= best.first < step.end
    if best.score < WEAK_SCORE or outside or only_wrap_up(text, best.first, best.last):
        ranges += _step_pick(view, text, longest, max_lines)
    return fit(ranges, max_lines)


def _longest(examples: Sequence[Example], max_lines: int) -> int:
    return min(max(len(e.chunk.split("\n")) for e in examples), max_lines)


def _step_pick(view: LogView, text: dict[int, str], length: int, max_lines: int) -> list[tuple[int, int]]:
    """The failing-step localisation, each range widened like a chunk to the examples' `length`."""
    return [(first, widen(text, first, last, length)) for first, last in locate_in_step(view, max_lines, rescore=True)]


def excerpt_passing(source: LogSource, passing: LogSource, max_lines: int) -> Excerpt:
    known = passing_signatures(iter_blocks(passing))
    view = scan(source, diff_finder(known))
    text = view.text_of()
    scores = {n: v for region in view.regions for n, v in region.hits.items()}
    # Every new block is output (the failure often spans several: the error, its stack trace, the
    # summary), so no share of the best is required; stack frames the passing run also printed are
    # bridged and followed because they belong to the new exception around them.
    shape = Shape(gap=1, follow=budgets.EXCERPT_WINDOW_LINES, keep_ratio=0.0, bridge=budgets.EXCERPT_WINDOW_LINES)
    blocks = build_blocks(scores, text, end_prior(view.total_lines, shape), shape)
    # Novelty alone is weak evidence (timings, downloads): a block needs a failure cue to compete.
    blocks = [b for b in blocks if any(cue_score(text.get(n, "")) > 0 for n in range(b.first, b.last + 1))] or blocks
    return assemble(view, choose(blocks, max_lines, shape), "passing")


def excerpt_lines(
    source: LogSource,
    *,
    passing: LogSource | None = None,
    examples: Sequence[Example] | None = None,
    max_lines: int | None = None,
) -> Excerpt:
    """Localise the failure in `source` (a path, plain or gzip, or an iterable of lines).

    With `passing`, lines new against that passing run are ranked; with `examples`, lines like the
    examples' chunks are; otherwise general failure cues and the position in the log decide.
    """
    limit = max_lines or budgets.EXCERPT_MAX_LINES
    if passing is not None:
        return excerpt_passing(source, passing, max_lines or budgets.EXCERPT_PASSING_MAX_LINES)
    if examples:
        return excerpt_examples(source, examples, max_lines or budgets.EXCERPT_EXAMPLES_MAX_LINES)
    return excerpt_unsupervised(source, limit)
