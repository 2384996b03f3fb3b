"""Whether two checkouts' excerpt engines give byte-identical excerpts on the evaluation data and on given logs.

Usage: python bench/excerpt_identical.py OLD_CHECKOUT LOGCHUNKS_DIR CIDIFF_DIR [LOG ...]
Each checkout runs in a child process: its own `bench/logchunks_eval.py` and `bench/cidiff_eval.py` on the
two folders, and `excerpt_lines` on each LOG, with every `excerpt_lines` call recorded (arguments, ranges,
numbered text, line count, mode). This checkout is the new engine. Ends with one JSON line: calls and logs
compared, and the calls that differ (none when the engines agree byte for byte).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import hashlib, json, runpy, sys
checkout, logchunks, cidiff, *logs = sys.argv[1:]
sys.path[:0] = [checkout, checkout + "/bench"]
import hummingbird_agent.logs as logs_api
from hummingbird_agent.logs import format_excerpt
assert logs_api.__file__.startswith(checkout), logs_api.__file__
engine = logs_api.excerpt_lines
def recorded(source, **kw):
    excerpt = engine(source, **kw)
    args = {k: (str(v) if k == "passing" else len(v) if k == "examples" else v) for k, v in kw.items() if v}
    text = json.dumps([excerpt.ranges, format_excerpt(excerpt), excerpt.total_lines, excerpt.mode])
    print(json.dumps([str(source), args, hashlib.sha256(text.encode()).hexdigest()]), flush=True)
    return excerpt
logs_api.excerpt_lines = recorded
for script, data in (("logchunks_eval.py", logchunks), ("cidiff_eval.py", cidiff)):
    sys.argv = [script, data]
    runpy.run_path(f"{checkout}/bench/{script}", run_name="eval")["main"](__import__("pathlib").Path(data))
for log in logs:
    recorded(log)
"""


def calls(checkout: Path, data: list[str]) -> list[list]:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(checkout), *data], capture_output=True, text=True,
                          check=True, cwd=checkout)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith('["')]


def main(old: Path, data: list[str]) -> dict[str, object]:
    new = Path(__file__).resolve().parents[1]
    before, after = calls(old.resolve(), data), calls(new, data)
    differ = [b[:2] for b, a in zip(before, after, strict=False) if a != b]
    if len(before) != len(after):
        differ.append(["call count", len(before), len(after)])
    return {"calls": len(after), "logs": len({c[0] for c in after}), "differ": differ}


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit("usage: excerpt_identical.py OLD_CHECKOUT LOGCHUNKS_DIR CIDIFF_DIR [LOG ...]")
    print(json.dumps(main(Path(sys.argv[1]), sys.argv[2:])))
