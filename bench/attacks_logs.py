"""Attack families on what a log says (bench/triage.py): (a) a new failure planted anywhere in a log that fails as
the base's did, in each runner's format; (b) a test report whose failed cases all fail on the base while the log prints
a new failure; (k) short logs of real tools, the base's own but for the runner's sections, or with one problem more."""

from __future__ import annotations

import re
from pathlib import Path

from bench.attack_model import POSITIONS, Attack, LogPool, failed, planted
from bench.runner_formats import FORMATS, failure
from tests.triage.world import Case

REAL_TOOLS = Path(__file__).resolve().parents[1] / "tests" / "triage" / "real_tools_output.txt"
# Formats of a test runner (with a junit report beside them): the new failure of family (b).
TEST_FORMATS = ("pytest", "unittest", "go", "cargo", "ctest", "jest", "vitest", "mocha", "surefire", "gradle",
                "phpunit", "rspec", "tap", "fail-bracket")
# The job each recorded tool runs in.
JOB_OF = {"ruff": "lint", "ruff-concise": "lint", "eslint": "lint", "mypy": "typecheck", "tsc": "typecheck",
          "gcc": "compile", "g++": "compile", "rustc": "compile", "javac": "compile", "go-build": "compile"}
# Passing cases every report also lists (a small suite).
PASSING_CASES = 12


def new_anywhere(pool: LogPool) -> list[Attack]:
    """(a) The base fails as the log did; the MR's log adds one failure of a format at an early, middle or late
    line. Truth: new."""
    out = []
    for f, fmt in enumerate(FORMATS):
        for p, where in enumerate(POSITIONS):
            k = f * len(POSITIONS) + p
            mine = planted(pool.other_run(k), failure(fmt, k), where)
            out.append(Attack("a", f"{fmt} {where}", pool.project("a", f"{fmt}-{where}", k), {"test": "new"},
                              mr=(failed("test", mine),), base=(failed("test", pool.log(k)),),
                              logs=(str(pool.row(k)["log_id"]),)))
    return out


def _cases(failing: tuple[str, ...], stack: str = "") -> tuple[Case, ...]:
    listed = [Case(n, "failed", classname="tests.test_suite", stack_trace=stack or f"AssertionError: {n}")
              for n in failing]
    return (*listed, *(Case(f"test_ok_{n:02d}", "success", classname="tests.test_suite", stack_trace=None)
                       for n in range(PASSING_CASES)))


def report_not_log(pool: LogPool) -> list[Attack]:
    """(b) The job's report lists two failed cases, both failing on the base; its log (the base's, run again) also
    prints a failure of another runner the report does not list. Truth: new (a report adds to the log)."""
    out = []
    for k in range(len(pool.repos)):
        fmt = TEST_FORMATS[k % len(TEST_FORMATS)]
        mine = planted(pool.other_run(k), failure(fmt, 100 + k), "late")
        out.append(Attack("b", fmt, pool.project("b", fmt, k), {"unit": "new"},
                          mr=(failed("unit", mine, cases=_cases(("test_a", "test_b"))),),
                          base=(failed("unit", pool.log(k), cases=_cases(("test_a", "test_b"))),),
                          logs=(str(pool.row(k)["log_id"]),)))
    return out


def recorded_tools() -> dict[str, tuple[str, str, str]]:
    """tool -> its output on the base input, on the same input moved down by lines the MR added above it, and on
    the MR's input with one problem more, as recorded."""
    parts = re.split(r"^### (\S+) \((base|moved|added)\)\n", REAL_TOOLS.read_text(), flags=re.M)
    found: dict[str, dict[str, str]] = {}
    for name, variant, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        found.setdefault(name, {})[variant] = body.rstrip("\n")
    return {name: (v["base"], v["moved"], v["added"]) for name, v in found.items()
            if {"base", "moved", "added"} <= v.keys()}


def short_logs(pool: LogPool, repeats: int = 2) -> list[Attack]:
    """(k) A job of a recorded tool (linter, type checker, compiler, test runner) whose whole output is the base's,
    byte for byte, or the base's with every problem moved down by lines the MR added above, but for the runner's
    sections (pre-existing); and the same job printing one problem more than the base (new)."""
    out = []
    for t, (tool, (base, moved, added)) in enumerate(sorted(recorded_tools().items())):
        job = JOB_OF.get(tool, tool)
        for r in range(repeats):
            k = t * repeats + r
            for kind, mine, truth in (("identical", base, "pre-existing"), ("moved", moved, "pre-existing"),
                                      ("one more", added, "new")):
                out.append(Attack("k", f"{tool} {kind}", pool.project("k", f"{tool}-{kind}", k), {job: truth},
                                  mr=(failed(job, mine + "\n"),), base=(failed(job, base + "\n"),),
                                  logs=(f"real_tools:{tool}",)))
    return out
