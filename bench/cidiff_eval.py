"""CiDiff protocol: precision/recall/F1 of excerpts against the E (error) lines of each breakage.

Usage: python bench/cidiff_eval.py DATA_DIR   (one sub-folder per breakage: fail.log, pass.log,
groundtruth). Prints per-case figures on stderr, then one JSON line with the means.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from hummingbird_agent.logs import excerpt_lines

_BREAK = re.compile(rb"\r\n|\r|\n")


def error_lines(case: Path) -> set[int]:
    """The E lines, renumbered from the data set's numbering to `\\n`-separated raw lines.

    The ground truth counts a line at every `\\r\\n`, `\\r` or `\\n`; excerpts count `\\n` only.
    """
    raw = (case / "fail.log").read_bytes()
    to_raw = [1]
    for match in _BREAK.finditer(raw):
        to_raw.append(to_raw[-1] + (1 if match.group().endswith(b"\n") else 0))
    truth: set[int] = set()
    for line in (case / "groundtruth").read_text(encoding="utf-8").splitlines()[1:]:
        kind, _, span = line.partition(" ")
        if kind != "E" or not span.strip():
            continue
        first, _, last = span.strip().partition("-")
        for n in range(int(first), int(last or first) + 1):
            if n <= len(to_raw):
                truth.add(to_raw[n - 1])
    return truth


def score(got: set[int], truth: set[int]) -> dict[str, float]:
    hit = len(got & truth)
    precision = hit / len(got) if got else 0.0
    recall = hit / len(truth) if truth else 0.0
    f1 = 2 * precision * recall / (precision + recall) if hit else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def main(root: Path) -> dict[str, dict[str, float]]:
    rows: dict[str, list[dict[str, float]]] = {"passing": [], "alone": []}
    for case in sorted(p for p in root.iterdir() if (p / "groundtruth").is_file()):
        truth = error_lines(case)
        for mode, passing in (("passing", case / "pass.log"), ("alone", None)):
            excerpt = excerpt_lines(case / "fail.log", passing=passing)
            got = {n for first, last in excerpt.ranges for n in range(first, last + 1)}
            row = score(got, truth)
            rows[mode].append(row)
            print(f"{case.name:24} {mode:8} " + " ".join(f"{k}={v:.2f}" for k, v in row.items()), file=sys.stderr)
    return {
        mode: {k: round(sum(r[k] for r in rs) / max(len(rs), 1), 4) for k in ("precision", "recall", "f1")}
        for mode, rs in rows.items()
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: cidiff_eval.py DATA_DIR")
    print(json.dumps(main(Path(sys.argv[1]))))
