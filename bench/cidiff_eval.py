"""CiDiff protocol: precision/recall/F1 of excerpts against the E (error) lines of each breakage.

Usage: python bench/cidiff_eval.py DATA_DIR   (one sub-folder per breakage: fail.log, pass.log,
groundtruth). Cases without E lines are skipped (counted). Each case is its own project, so the
5 folds are folds of cases. Baselines: the last lines of the failed log (15, or as many as the mode
output) and, with the same information as the passing mode, every line whose signature the passing
log never printed. Prints per-case figures on stderr, then one JSON line (`n`, `skipped`, per mode
and baseline the means and the fold F1, mean and worst fold).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

# The checkout this file is in, not whichever copy of the package the interpreter has installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from excerpt_figures import covered, report, score, tail  # noqa: E402

from hummingbird_agent.logs import excerpt_lines, signature  # noqa: E402

TAIL_LINES = 15
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


def new_lines(case: Path) -> set[int]:
    """Every non-blank line of the failed log whose signature the passing log never printed."""
    def lines(name: str) -> list[str]:
        return (case / name).read_bytes().decode("utf-8", "replace").split("\n")

    known = {signature(line) for line in lines("pass.log")}
    return {n for n, line in enumerate(lines("fail.log"), 1) if line.strip() and signature(line) not in known}


def main(root: Path) -> dict[str, object]:
    rows: dict[str, list] = {
        k: [] for k in ("passing", "alone", "baseline_tail_15", "baseline_tail_as_alone",
                        "baseline_tail_as_passing", "baseline_new_lines")
    }
    skipped: list[str] = []
    n = 0
    for case in sorted(p for p in root.iterdir() if (p / "groundtruth").is_file()):
        truth = error_lines(case)
        if not truth or not (case / "pass.log").is_file():
            skipped.append(case.name)
            continue
        n += 1
        passing = excerpt_lines(case / "fail.log", passing=case / "pass.log")
        alone = excerpt_lines(case / "fail.log")
        total = alone.total_lines
        figures = {
            "passing": covered(passing.ranges),
            "alone": covered(alone.ranges),
            "baseline_tail_15": tail(total, TAIL_LINES),
            "baseline_tail_as_alone": tail(total, len(covered(alone.ranges))),
            "baseline_tail_as_passing": tail(total, len(covered(passing.ranges))),
            "baseline_new_lines": new_lines(case),
        }
        for mode, got in figures.items():
            row = score(got, truth)
            rows[mode].append((case.name, row))
            print(f"{case.name:24} {mode:26} " + " ".join(f"{k}={v:.2f}" for k, v in row.items()), file=sys.stderr)
    return report(rows, n, skipped)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: cidiff_eval.py DATA_DIR")
    print(json.dumps(main(Path(sys.argv[1]))))
