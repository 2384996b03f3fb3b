"""Throughput and peak memory of the excerpt on two generated 300 MB build logs.

Usage: python bench/excerpt_speed.py [WORK_DIR]   (where the logs are generated; default: a temp dir)
`tail`: compiler lines, passing tests, CR progress bars, ANSI colours, benign cue words (-Werror,
"Failures: 0") and one real failure near the end. `realistic`: what concatenated CI logs look like, with
failures all through it: timestamps, ANSI colours, GitLab section markers, long lines (JSON dumps, command
lines), long CR progress bars, warnings naming `err`/`fail` files and flags, and a failed test, traceback,
Java stack trace, Go FAIL or npm ERR! every few hundred lines. Each excerpt runs in a child process that
reports its own peak RSS and CPU time. `read_mb_per_s` is a plain read of the same file in the same run (a
baseline for the machine's state); `cpu_mb_per_s` is the size over the child's CPU time, which other work
on a shared machine disturbs less than the elapsed time. Ends with one JSON line.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_BYTES = 300 * 1024 * 1024
PATTERN_LINES = 60_000

_CHILD = """
import resource, sys, time
from hummingbird_agent.logs import excerpt_lines
start, cpu = time.perf_counter(), time.process_time()
excerpt = excerpt_lines(sys.argv[1])
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
print(excerpt.ranges, elapsed, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
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


def realistic_pattern(rng: random.Random) -> bytes:
    """About 60k lines of mixed CI output with a failure every few hundred lines."""
    out: list[str] = []
    while len(out) < PATTERN_LINES:
        out.extend(_noise(rng, rng.randint(150, 600)))
        out.extend(rng.choice(_FAILURES)(rng))
    return ("\n".join(out) + "\n").encode()


def _stamp(rng: random.Random) -> str:
    return f"2024-05-01T12:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}Z 00O "


# Mostly routine; one in 25 names a cue word without failing.
_VERBS = ("downloading", "resolving", "linking", "copying", "exiting cleanly", *["unpacking"] * 20)


def _noise(rng: random.Random, count: int) -> list[str]:
    out = []
    for _ in range(count):
        r = rng.random()
        n = rng.randint(0, 99999)
        if r < 0.25:
            flags = "-O2 -Wall -Werror" if n % 16 == 0 else "-O2 -Wall"
            name = "fail_safe" if n % 25 == 0 else "handler"
            out.append(f"{_stamp(rng)}[INFO] Compiling src/pkg{n % 97}/{name}_{n}.c {flags}")
        elif r < 0.4:
            out.append(f"{_stamp(rng)}tests/test_mod{n % 50}.py::test_case_{n} \x1b[32mPASSED\x1b[0m [{n % 100:3d}%]")
        elif r < 0.44:
            out.append("\r".join(f"Downloading layer {n:x} {k}% |{'#' * (k // 5):20}|" for k in range(0, 101, 5)))
        elif r < 0.443:
            fields = ",".join(f'"k{i}": {{"count": {i}, "value": {rng.random():.6f}}}'
                              for i in range(rng.randint(20, 600)))
            out.append(f'{_stamp(rng)}metrics {{"stderr": "", "errors": 0, {fields}}}')
        elif r < 0.45:
            out.append("$ gcc " + " ".join(f"-Isrc/handling/inc{i}" for i in range(rng.randint(20, 200))))
        elif r < 0.46:
            out.append(f"src/err{n % 9}.c:{n % 400}:5: warning: unused variable 'err' [-Wunused-variable]")
        elif r < 0.465:
            out.append(f"\x1b[0Ksection_start:{1700000000 + n}:step_{n % 30}\r\x1b[0K\x1b[36;1m$ make test\x1b[0;m")
        elif r < 0.48:
            out.append(f"[INFO] Tests run: {n % 90 + 1}, Failures: 0, Errors: 0, Skipped: {n % 3}")
        elif r < 0.6:
            out.append(f"--- PASS: TestHandler{n} ({rng.random():.2f}s)")
        else:
            verb = rng.choice(_VERBS)
            out.append(f"{_stamp(rng)}   {verb} {rng.randbytes(8).hex()} ({n} bytes)")
    return out


def _pytest_failure(rng: random.Random) -> list[str]:
    n = rng.randint(0, 10**6)
    return [
        f"tests/test_api.py::test_endpoint_{n} \x1b[31mFAILED\x1b[0m",
        "Traceback (most recent call last):",
        *(f'  File "/app/src/module{i}.py", line {rng.randint(1, 900)}, in handler_{i}' for i in range(6)),
        f"\x1b[31mE       AssertionError: expected 200, got {rng.choice([404, 500, 503])}\x1b[0m",
        f"FAILED tests/test_api.py::test_endpoint_{n} - AssertionError",
    ]


def _java_failure(rng: random.Random) -> list[str]:
    return [
        f"[ERROR] Tests run: 12, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: {rng.random():.3f} s <<< FAILURE!",
        "java.lang.NullPointerException: Cannot invoke \"String.length()\" because \"name\" is null",
        *(f"\tat org.example.pkg{i}.Service.call(Service.java:{rng.randint(10, 500)})" for i in range(20)),
    ]


def _go_failure(rng: random.Random) -> list[str]:
    return [f"    handler_test.go:{rng.randint(10, 300)}: got {rng.randint(0, 9)}, want 10",
            f"--- FAIL: TestHandler{rng.randint(0, 999)} ({rng.random():.2f}s)", "FAIL", "exit status 1"]


def _npm_failure(rng: random.Random) -> list[str]:
    return [f"npm ERR! code E{rng.choice(['RESOLVE', 'LIFECYCLE', 'NOENT'])}", "npm ERR! errno 1",
            f"npm ERR! pkg@1.{rng.randint(0, 9)}.0 build: `tsc -p .`", "npm ERR! Exit status 1"]


_FAILURES = (_pytest_failure, _java_failure, _go_failure, _npm_failure)


def generate(path: Path, block: bytes) -> int:
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


def read_s(path: Path) -> float:
    start = time.perf_counter()
    with path.open("rb") as handle:
        while handle.read(1024 * 1024):
            pass
    return time.perf_counter() - start


def measure(log: Path) -> dict[str, object]:
    size = log.stat().st_size
    done = subprocess.run([sys.executable, "-c", _CHILD, str(log)], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1])  # this checkout's package
    ranges, elapsed, cpu, peak_kb = done.stdout.rsplit(" ", 3)
    print(f"{log.name}: ranges {ranges} in {float(elapsed):.1f}s", file=sys.stderr)
    mb = size / 1e6
    return {"mb_per_s": round(mb / float(elapsed), 1), "cpu_mb_per_s": round(mb / float(cpu), 1),
            "peak_rss_mb": round(int(peak_kb) / 1024, 1), "read_mb_per_s": round(mb / read_s(log), 1)}  # fmt: skip


def main(work: Path) -> dict[str, object]:
    result: dict[str, object] = {}
    for name, block in (("tail", pattern(random.Random(8))), ("realistic", realistic_pattern(random.Random(8)))):
        log = work / f"{name}.log"
        generate(log, block)
        result[name] = measure(log)
        log.unlink()
    result["load_1m"] = round(os.getloadavg()[0], 2)
    return result


if __name__ == "__main__":
    if len(sys.argv) > 2:
        raise SystemExit("usage: excerpt_speed.py [WORK_DIR]")
    if len(sys.argv) == 2:
        print(json.dumps(main(Path(sys.argv[1]))))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(main(Path(tmp))))
