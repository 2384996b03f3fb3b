"""Shared scoring of the excerpt benchmarks: line-level P/R/F1, folds by repository, tail baselines.

Every mode and baseline is reported as the mean over logs plus a k-fold-by-repository figure (the
mean and the worst of the folds' mean F1), so a figure carried by a few repositories shows.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

FOLDS = 5


def score(got: set[int], truth: set[int]) -> dict[str, float]:
    hit = len(got & truth)
    precision = hit / len(got) if got else 0.0
    recall = hit / len(truth) if truth else 0.0
    f1 = 2 * precision * recall / (precision + recall) if hit else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def covered(ranges: Iterable[tuple[int, int]]) -> set[int]:
    return {n for first, last in ranges for n in range(first, last + 1)}


def tail(total: int, lines: int) -> set[int]:
    """The last `lines` lines of a log of `total` lines (a trailing empty line counts, as in the raw file)."""
    return set(range(max(1, total - lines + 1), total + 1))


def fold_of(repositories: Iterable[str]) -> dict[str, int]:
    """Repositories in name order dealt round-robin into FOLDS folds (deterministic, no tuning on it)."""
    return {repo: i % FOLDS for i, repo in enumerate(sorted(set(repositories)))}


def summarise(rows: list[tuple[str, dict[str, float]]], folds: dict[str, int]) -> dict[str, object]:
    """Means over logs, `full`/`partial` recall shares, and the fold figure of F1 (mean and worst fold)."""
    n = max(len(rows), 1)
    out: dict[str, object] = {k: round(sum(r[k] for _, r in rows) / n, 4) for k in ("precision", "recall", "f1")}
    out["full"] = round(sum(r["recall"] == 1.0 for _, r in rows) / n, 4)
    out["partial"] = round(sum(0.0 < r["recall"] < 1.0 for _, r in rows) / n, 4)
    per_fold: dict[int, list[float]] = {}
    for repo, row in rows:
        per_fold.setdefault(folds[repo], []).append(row["f1"])
    means = [sum(v) / len(v) for _, v in sorted(per_fold.items())]
    out["fold_f1"] = [round(m, 4) for m in means]
    out["fold_f1_mean"] = round(sum(means) / max(len(means), 1), 4)
    out["fold_f1_worst"] = round(min(means, default=0.0), 4)
    return out


def report(rows: dict[str, list[tuple[str, dict[str, float]]]], n: int, skipped: list[str]) -> dict[str, object]:
    """The one JSON object of a benchmark; a readable table on stderr."""
    folds = fold_of(repo for mode_rows in rows.values() for repo, _ in mode_rows)
    result: dict[str, object] = {"n": n, "skipped": len(skipped), "folds": FOLDS}
    for mode, mode_rows in rows.items():
        figures = summarise(mode_rows, folds)
        result[mode] = figures
        shown = " ".join(f"{k}={v:.3f}" for k, v in figures.items() if isinstance(v, float))
        print(f"{mode:28} {shown}", file=sys.stderr)
    print(f"n={n} skipped={len(skipped)} {' '.join(skipped)}", file=sys.stderr)
    return result
