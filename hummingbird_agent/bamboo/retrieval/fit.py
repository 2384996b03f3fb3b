"""The fit score that ranks a diagnosis's candidate causes (0-1): how the clues that reach a cause, its
incidents' similarity, its share of the project's incidents and its whole logs add up.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.stores.base import NodeRow

Weights = dict[tuple[str, str], float]  # (cause, clue type) -> specificity of its most specific clue

# Weights of the fit score (chosen on the development split, 5 folds; see docs/how-good-is-it.md): the project's and
# other task features, the best similarity of the cause's incidents, its specific error lines, its share
# of the incidents the task's features reach (a frequent cause of this project is the likelier one), and
# how much closer its incidents' whole logs are than the typical one (chosen leaving one fold out among
# 0-3: 1.5 for every held-out fold).
_W_FEATURE, _W_SIMILARITY, _W_SYMPTOM, _W_OTHER, _W_SHARE = 1.0, 1.0, 0.25, 0.25, 0.25
_W_LOG = 1.5
# Cosine below which two texts share nothing but chance words (the hashing embedder scores unrelated log
# lines at 0.1-0.3): similarity counts from here.
_SIMILARITY_FLOOR = 0.2


@dataclass(slots=True)
class ReachedCause:
    """A cause the new failure reaches, with what reached it: clue type -> clue names (incident ids for
    the similar-incident clue)."""

    row: NodeRow
    reached: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


def cause_fits(reached: Mapping[str, ReachedCause], weight: Weights, scores: Mapping[str, tuple[float, str]],
               logs: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """Per reached cause, the best similarity of its incidents (`scores`: incident id -> (score, matched
    text)) and its fit score. A (cause, clue type) missing from `weight` weighs 0: the similar-incident clue
    counts through the similarity instead. `logs` (incident id -> whole-log similarity) is empty for a
    failure without logs."""
    best = _best_similarity(reached, scores)
    share = _shares(reached)
    log_fit = _log_fits(reached, logs)
    fit = {name: _fit({t: weight.get((name, t), 0.0) for t in c.reached}, best[name], share.get(name, 0.0),
                      log_fit[name]) for name, c in reached.items()}
    return best, fit


def _fit(clues: Mapping[str, float], similarity: float, share: float, log: float | None = None) -> float:
    """0-1: how well a cause fits the new failure. Each term is 0-1, so the score is comparable across
    failures, and a low best score means no learned cause fits. `log` None: no whole log to compare
    (a failure without logs), so the term is left out rather than counted as a mismatch."""
    similar = max(similarity - _SIMILARITY_FLOOR, 0.0) / (1 - _SIMILARITY_FLOOR)
    other = max(clues.get("component", 0.0), clues.get("environment", 0.0))
    w_log = 0.0 if log is None else _W_LOG
    total = (_W_FEATURE * clues.get("task_feature", 0.0) + _W_SIMILARITY * similar
             + _W_SYMPTOM * clues.get("symptom", 0.0) + _W_OTHER * other + _W_SHARE * share + w_log * (log or 0.0))
    return round(total / (_W_FEATURE + _W_SIMILARITY + _W_SYMPTOM + _W_OTHER + _W_SHARE + w_log), 6)


def _log_fit(best: float, logs: Mapping[str, float]) -> float | None:
    """0-1: how much closer the cause's closest whole log is than the typical one (the median of the
    stored logs read, the ones not read counting as unlike): what every log of the project shares (its
    setup, its boilerplate) counts for nothing, as IDF discounts words common to all documents."""
    if not logs:
        return None
    scores = [*logs.values(), *[0.0] * (budgets.BAMBOO_LOG_VECTOR_HITS - len(logs))]
    typical = statistics.median(scores)
    return max(best - typical, 0.0) / max(1 - typical, 1e-9)


def _best_similarity(reached: Mapping[str, ReachedCause], scores: Mapping[str, tuple[float, str]]) -> dict[str, float]:
    """Per cause, the best score of any of its incidents (0 when none of them scored)."""
    return {name: max((scores[g][0] for g in c.row.incidents if g in scores), default=0.0)
            for name, c in reached.items()}


def _shares(reached: Mapping[str, ReachedCause]) -> dict[str, float]:
    """Per cause a task feature reaches, its share of the incidents of all the causes task features reach."""
    local = [c.row for c in reached.values() if "task_feature" in c.reached]
    return {r.name: r.frequency / max(sum(x.frequency for x in local), 1) for r in local}


def _log_fits(reached: Mapping[str, ReachedCause], logs: Mapping[str, float]) -> dict[str, float | None]:
    """Per cause, `_log_fit` of the closest whole log among its incidents."""
    return {name: _log_fit(max((logs.get(g, 0.0) for g in c.row.incidents), default=0.0), logs)
            for name, c in reached.items()}
