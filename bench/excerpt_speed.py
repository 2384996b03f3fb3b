"""Throughput and peak memory of the excerpt on a generated 500 MB build log.

Usage: python bench/excerpt_speed.py [WORK_DIR]   (where the log is generated; default: a temp dir)
The log mixes compiler lines, passing tests, CR progress bars, ANSI colours, benign cue words
(-Werror, "Failures: 0") and one real failure near the end. The excerpt runs in a child process so
its peak RSS is measured alone. Ends with one JSON line: mb_per_s, peak_rss_mb.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_BYTES = 500 * 1024 * 1024
PATTERN_LINES = 60_000

_CHILD = """
import sys
from hummingbird_agent.logs import excerpt_lines
excerpt = excerpt_lines(sys.argv[1])
print(excerpt.ranges)
"""


def pattern(rng: random.Random) -> bytes:
    out = []
    for i in range(PATTERN_LINES):
        r = rng.random()
        if r < 0.3:
            out.append(f"2024-05-01T12:{i % 60:02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}Z [INFO] "
                       f"Compiling src/pkg{rng.randint(0, 999)}/file_{rng.randint(0, 99999)}.c -O2 -Wall")
        elif r < 0.5:
            out.append(f"\x1b[32m✓\x1b[0m test_case_{rng.randint(0, 10**6)} passed in {rng.random():.3f}s")
        elif r < 0.6:
            out.append("Progress (1): " + "\r".join(f"{k}/100 kB" for k in range(0, 101, 25)))
        elif r < 0.61:
            out.append(f"gcc -c -Werror -o build/obj{rng.randint(0, 999)}.o src/x.c")
        elif r < 0.615:
            out.append(f"Tests run: {rng.randint(1, 99)}, Failures: 0, Errors: 0, Skipped: 0")
        else:
            verb = rng.choice(["downloading", "resolving", "linking", "copying"])
            out.append(f"   {verb} {rng.randbytes(8).hex()} ({rng.randint(1, 9999)} bytes)")
    return ("\n".join(out) + "\n").encode()


def generate(path: Path) -> int:
    block = pattern(random.Random(8))
    written = 0
    with path.open("wb") as handle:
        while written < TARGET_BYTES:
            handle.write(block)
            written += len(block)
        tail = "src/core/main.c:42:7: error: 'cfg' undeclared (first use in this function)\n"
        tail += "make: *** [Makefile:12: build/main.o] Error 1\nERROR: Job failed: exit code 2\n"
        handle.write(tail.encode())
        written += len(tail)
    return written


def main(work: Path) -> dict[str, float]:
    log = work / "generated.log"
    size = generate(log)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CHILD, str(log)], capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - start
    log.unlink()
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"ranges {done.stdout.strip()} in {elapsed:.1f}s", file=sys.stderr)
    return {"mb_per_s": round(size / 1e6 / elapsed, 1), "peak_rss_mb": round(peak_kb / 1024, 1)}


if __name__ == "__main__":
    if len(sys.argv) > 2:
        raise SystemExit("usage: excerpt_speed.py [WORK_DIR]")
    if len(sys.argv) == 2:
        print(json.dumps(main(Path(sys.argv[1]))))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(main(Path(tmp))))
