"""LogChunks protocol: line-level precision/recall/F1 of excerpts against the labelled failure chunks.

Usage: python bench/logchunks_eval.py DATA_DIR   (a folder with index.jsonl and the logs it names)
For each repository, each labelled log in turn is the test log and up to 5 other labelled logs of
that repository are the examples. Logs whose chunk cannot be found in the log are skipped (counted).
Baselines get the same information as the mode they compare with: the last lines of the log (15, or
as many as the mode output), and for the examples mode the examples' median length and distance
from the log end. Prints a table on stderr, then one JSON line with `n`, `skipped` and, per mode and
baseline, the means and the 5-fold-by-repository F1 (mean and worst fold).
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import sys
from pathlib import Path

# The checkout this file is in, not whichever copy of the package the interpreter has installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from excerpt_figures import covered, report, score, tail  # noqa: E402

from hummingbird_agent.logs import Example, excerpt_lines  # noqa: E402

MAX_EXAMPLES = 5
TAIL_LINES = 15
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


def load(root: Path) -> list[dict]:
    records = []
    for raw in (root / "index.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        log = root / record["build_log"]
        with gzip.open(log, "rt", encoding="utf-8", errors="replace", newline="") as handle:
            lines = handle.read().split("\n")
        record["path"], record["total"] = str(log), len(lines)
        record["truth"] = chunk_lines(lines, record["chunk"])
        records.append(record)
    return records


def position_baseline(examples: list[Example], total: int) -> set[int]:
    """The examples' median chunk length, at their median distance from the log end."""
    length = int(statistics.median(len(e.chunk.split("\n")) for e in examples))
    from_end = int(statistics.median(e.from_end or 0 for e in examples))
    last = max(1, total - from_end)
    return set(range(max(1, last - length + 1), last + 1))


def main(root: Path) -> dict[str, object]:
    records = load(root)
    usable = [r for r in records if r["truth"]]
    skipped = [f"{r['repository']}/{r['log_id']}" for r in records if not r["truth"]]
    rows: dict[str, list] = {
        k: [] for k in ("examples", "unsupervised", "baseline_tail_15", "baseline_tail_as_unsupervised",
                        "baseline_tail_as_examples", "baseline_examples_position")
    }
    for record in usable:
        repo, truth = record["repository"], record["truth"]
        others = [o for o in usable if o["repository"] == repo and o is not record][:MAX_EXAMPLES]
        examples = [Example(o["chunk"], tuple(o["keywords"]), o["total"] - max(o["truth"])) for o in others]
        unsupervised = excerpt_lines(record["path"])
        got = covered(unsupervised.ranges)
        total = unsupervised.total_lines
        rows["unsupervised"].append((repo, score(got, truth)))
        rows["baseline_tail_15"].append((repo, score(tail(total, TAIL_LINES), truth)))
        rows["baseline_tail_as_unsupervised"].append((repo, score(tail(total, len(got)), truth)))
        if examples:
            guided = covered(excerpt_lines(record["path"], examples=examples).ranges)
            rows["examples"].append((repo, score(guided, truth)))
            rows["baseline_tail_as_examples"].append((repo, score(tail(total, len(guided)), truth)))
            rows["baseline_examples_position"].append((repo, score(position_baseline(examples, total), truth)))
    return report(rows, len(usable), skipped)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: logchunks_eval.py DATA_DIR")
    print(json.dumps(main(Path(sys.argv[1]))))
