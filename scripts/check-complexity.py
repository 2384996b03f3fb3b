"""Lint gate: no block of hummingbird_agent (function, method, nested closure, class) over MAX_COMPLEXITY.

    python scripts/check-complexity.py   # lists each block over the limit and exits 1; silent and 0 otherwise
"""

from __future__ import annotations

import sys
from pathlib import Path

from radon.complexity import add_inner_blocks, cc_visit

# House style's limit for radon's cyclomatic complexity. Stricter than it looks next to ruff's mccabe
# max-complexity of 12: radon also counts each boolean operator and each comprehension (and its ifs),
# which mccabe does not, so a block ruff passes can still land here.
MAX_COMPLEXITY = 15
PACKAGE = Path(__file__).resolve().parents[1] / "hummingbird_agent"


def over_limit(path: Path) -> list[str]:
    """One line per block of `path` over the limit; closures and inner classes are blocks of their own."""
    blocks = add_inner_blocks(cc_visit(path.read_text(encoding="utf-8")))
    where = path.relative_to(PACKAGE.parent)
    return [f"{where}:{b.lineno} {b.fullname} has complexity {b.complexity} (limit {MAX_COMPLEXITY})"
            for b in sorted(blocks, key=lambda b: b.lineno) if b.complexity > MAX_COMPLEXITY]


def main() -> int:
    found = [line for path in sorted(PACKAGE.rglob("*.py")) for line in over_limit(path)]
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
