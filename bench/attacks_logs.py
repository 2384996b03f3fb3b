"""Attack families on what a log says (bench/triage.py): (a) a new failure planted anywhere in a log that fails as
the base's did, in each runner's format; (b) a test report whose failed cases all fail on the base while the log prints
a new failure; (k) short lint and type-check logs, identical on the base but for the runner's sections."""

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
# A linter the real-tools record lacks: eslint's stylish output on a base file and on the MR's, one problem more.
ESLINT_BASE = """$ npx eslint src
/builds/app/src/cart.js
  3:7   error  'total' is assigned a value but never used  no-unused-vars
  12:5  error  Unexpected console statement                 no-console

✖ 2 problems (2 errors, 0 warnings)"""
ESLINT_ADDED = ESLINT_BASE.replace(
    "  12:5  error  Unexpected console statement                 no-console",
    "  12:5  error  Unexpected console statement                 no-console\n"
    "  19:9  error  'discount' is not defined                    no-undef").replace("✖ 2 problems (2 errors",
                                                                                    "✖ 3 problems (3 errors")
# The job each recorded tool runs in.
JOB_OF = {"ruff": "lint", "ruff-concise": "lint", "mypy": "typecheck", "pytest": "unit", "gcc": "compile",
          "g++": "compile", "shellcheck": "shellcheck", "eslint": "eslint"}
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


def recorded_tools() -> dict[str, tuple[str, str]]:
    """tool -> (output on the base input, output on the MR's input with one problem more), as recorded."""
    text = REAL_TOOLS.read_text()
    parts = re.split(r"^### (\S+) \((base|added)\)\n", text, flags=re.M)
    found: dict[str, dict[str, str]] = {}
    for name, variant, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        found.setdefault(name, {})[variant] = body.rstrip("\n")
    found["eslint"] = {"base": ESLINT_BASE, "added": ESLINT_ADDED}
    return {name: (v["base"], v["added"]) for name, v in found.items() if {"base", "added"} <= v.keys()}


def short_logs(pool: LogPool, repeats: int = 2) -> list[Attack]:
    """(k) A lint, type-check or compile job whose whole output is the base's, byte for byte, but for the runner's
    sections (pre-existing); and the same job printing one problem more than the base (new)."""
    out = []
    for t, (tool, (base, added)) in enumerate(sorted(recorded_tools().items())):
        job = JOB_OF.get(tool, tool)
        for r in range(repeats):
            k = t * repeats + r
            for kind, mine, truth in (("identical", base, "pre-existing"), ("one more", added, "new")):
                out.append(Attack("k", f"{tool} {kind}", pool.project("k", f"{tool}-{kind}", k), {job: truth},
                                  mr=(failed(job, mine + "\n"),), base=(failed(job, base + "\n"),),
                                  logs=(f"real_tools:{tool}",)))
    return out
