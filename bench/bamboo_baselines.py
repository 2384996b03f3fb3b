"""Baselines of bench/bamboo_retrieval.py, each restricted to the new log's project (the knowledge base's project
clue) and given no more than the knowledge base learns.

One-signal: TF-IDF of the new log's failure excerpt (localised as the knowledge base does, with the project's
learned lines as examples) against the learned excerpts, the same with the whole new log as the query, the most
frequent learned cause, and the whole new log against the learned whole logs. Two-signal: the two signals the
knowledge base ranks with, summed per cause as excerpt score + w x whole-log score; w is chosen for each fold on
the other folds only (`choose_weights`), from the grid the knowledge base's own whole-log weight was chosen on.
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bamboo_naming import label  # noqa: E402
from bench.bamboo_tfidf import TfIdf, ranked_by  # noqa: E402
from hummingbird_agent.bamboo.diagnose.navigator import with_examples  # noqa: E402
from hummingbird_agent.bamboo.strategies.base import IncidentInput  # noqa: E402

Row = dict[str, Any]
# The grid the knowledge base's whole-log weight was chosen on (docs/how-good-is-it.md), so both get the same choice.
WEIGHTS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0)


def truth(row: Row) -> str:
    return label(row["repository"], row["category"])


def hit_rate(truths: list[str], ranked: list[list[str]], k: int) -> float:
    return sum(t in r[:k] for t, r in zip(truths, ranked, strict=True)) / max(len(truths), 1)


def localised(row: Row, learn: list[Row], log: str) -> str:
    """The new log's failure excerpt as the knowledge base localises it: the project's learned failure lines
    as examples, beside the general-cue excerpt."""
    lines = [line for r in learn if r["repository"] == row["repository"] for line in r["chunk"].splitlines()]
    return with_examples(IncidentInput("", {}, task_logs={"build": log}), lines).task_logs["build"]


def two_signal(excerpt: dict[str, float], whole: dict[str, float], weight: float) -> list[str]:
    return ranked_by({c: excerpt.get(c, 0.0) + weight * whole.get(c, 0.0) for c in set(excerpt) | set(whole)})


def baselines(learn: list[Row], test: list[Row], logs: dict[str, str]) -> dict[str, Any]:
    """Per baseline, the ranked causes of each test log; `two_signal` holds one such list per weight."""
    excerpts = TfIdf([(r["repository"], truth(r), r["chunk"]) for r in learn])
    wholes = TfIdf([(r["repository"], truth(r), logs[r["log_id"]]) for r in learn])
    out: dict[str, Any] = {"tfidf": [], "tfidf_top": [], "tfidf_whole_query": [], "majority": [], "whole": [],
                           "two_signal": {w: [] for w in WEIGHTS}}
    for row in test:
        log = logs[row["log_id"]]
        excerpt = excerpts.scores(row["repository"], localised(row, learn, log))
        whole = wholes.scores(row["repository"], log)
        out["tfidf"].append(ranked_by(excerpt))
        out["tfidf_top"].append(max(excerpt.values(), default=0.0))
        out["tfidf_whole_query"].append(excerpts.rank(row["repository"], log)[0])
        counts = Counter(truth(r) for r in learn if r["repository"] == row["repository"])
        out["majority"].append([c for c, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))])
        out["whole"].append(ranked_by(whole))
        for weight in WEIGHTS:
            out["two_signal"][weight].append(two_signal(excerpt, whole, weight))
    return out


def choose_weights(top1: list[dict[float, float]]) -> list[float]:
    """Per fold, from {weight: top-1} of every fold: the weight with the best mean top-1 on the other folds,
    then the best worst of them, then the smallest weight (a fold never sees its own figures)."""
    chosen = []
    for fold in range(len(top1)):
        others = [rates for other, rates in enumerate(top1) if other != fold] or top1

        def merit(weight: float, others: list[dict[float, float]] = others) -> tuple[float, float, float]:
            values = [rates[weight] for rates in others]
            return statistics.mean(values), min(values), -weight

        chosen.append(max(WEIGHTS, key=merit))
    return chosen
