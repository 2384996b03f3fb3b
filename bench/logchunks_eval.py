"""LogChunks protocol: line-level precision/recall/F1 of excerpts against the labelled failure chunks.

Usage: python bench/logchunks_eval.py DATA_DIR   (a folder with index.jsonl and the logs it names)
For each repository, each labelled log in turn is the test log and up to 5 other labelled logs of
that repository are the examples. Prints per-mode means, then one JSON line.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from hummingbird_agent.logs import Example, excerpt_lines

MAX_EXAMPLES = 5
_NOISE = re.compile(r"\x1b?\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")


def _key(line: str) -> str:
    # Labels were cut from the log with varying CR and ANSI handling; compare word characters only.
    return re.sub(r"\W+", "", _NOISE.sub("", line))


def chunk_lines(log_lines: list[str], chunk: str) -> set[int] | None:
    """1-based raw line numbers the chunk covers (first occurrence), or None when it is not found."""
    want = [k for k in map(_key, chunk.split("\n")) if k]
    have = [(n, k) for n, k in enumerate(map(_key, log_lines), 1) if k]
    keys = [k for _, k in have]
    for at in range(len(keys) - len(want) + 1):
        seg = keys[at : at + len(want)]
        if seg[1:-1] != want[1:-1]:
            continue
        single = len(want) == 1 and want[0] in seg[0]
        if single or (len(want) > 1 and seg[0].endswith(want[0]) and seg[-1].startswith(want[-1])):
            return set(range(have[at][0], have[at + len(want) - 1][0] + 1))
    return None


def score(got: set[int], truth: set[int]) -> dict[str, float]:
    hit = len(got & truth)
    precision = hit / len(got) if got else 0.0
    recall = hit / len(truth)
    f1 = 2 * precision * recall / (precision + recall) if hit else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def summarise(rows: list[dict[str, float]]) -> dict[str, float]:
    n = max(len(rows), 1)
    out = {k: round(sum(r[k] for r in rows) / n, 4) for k in ("precision", "recall", "f1")}
    out["full"] = round(sum(r["recall"] == 1.0 for r in rows) / n, 4)
    out["partial"] = round(sum(0.0 < r["recall"] < 1.0 for r in rows) / n, 4)
    return out


def load(root: Path) -> dict[str, list[dict]]:
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for raw in (root / "index.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        log = root / record["build_log"]
        with gzip.open(log, "rt", encoding="utf-8", errors="replace", newline="") as handle:
            lines = handle.read().split("\n")
        record["path"], record["total"] = str(log), len(lines)
        record["truth"] = chunk_lines(lines, record["chunk"])
        by_repo[record["repository"]].append(record)
    return by_repo


def main(root: Path) -> dict[str, dict[str, float]]:
    rows: dict[str, list[dict[str, float]]] = {"examples": [], "unsupervised": []}
    for records in load(root).values():
        usable = [r for r in records if r["truth"]]
        for record in usable:
            others = [o for o in usable if o is not record][:MAX_EXAMPLES]
            examples = [Example(o["chunk"], tuple(o["keywords"]), o["total"] - max(o["truth"])) for o in others]
            for mode, given in (("examples", examples), ("unsupervised", None)):
                excerpt = excerpt_lines(record["path"], examples=given)
                got = {n for first, last in excerpt.ranges for n in range(first, last + 1)}
                rows[mode].append(score(got, record["truth"]))
    result = {mode: summarise(r) for mode, r in rows.items()}
    for mode, figures in result.items():
        print(f"{mode:13} " + " ".join(f"{k}={v:.3f}" for k, v in figures.items()), file=sys.stderr)
    return result


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: logchunks_eval.py DATA_DIR")
    print(json.dumps(main(Path(sys.argv[1]))))
