"""Property: a failure line of any supported format, naming a test or a diagnostic the base does not have, put
anywhere in a pre-existing log (each tool's recorded real output, in GitLab job logs run by another runner), never
leaves the MR's failure the same as the base's. Seeded draws: a failure reproduces with its seed and draw."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hummingbird_agent.triage.compare import same_failure
from hummingbird_agent.triage.excerpt import LogEvidence, evidence_of
from tests.triage.gitlab_log import BRANCH, MAIN, job_log
from tests.triage.real_tools import TOOLS, recorded

SEED, DRAWS = 20260107, 600
# One failure line (or two: a headline and its location) per format; `{n}` is a name no recorded output uses.
FORMATS = {
    "pytest": ["FAILED tests/test_billing.py::test_round_{n} - AssertionError: assert 2 == 3"],
    "pytest-header": ["_______________________ test_round_{n} _______________________"],
    "unittest": ["FAIL: test_round_{n} (tests.test_billing.BillingTest.test_round_{n})"],
    "go-test": ["--- FAIL: TestRound{n} (0.00s)"],
    "go-package": ["FAIL\tgithub.com/acme/billing{n}\t0.012s"],
    "cargo-test": ["test billing::round_{n} ... FAILED"],
    "ctest": ["7/9 Test #7: round_{n} .........................***Failed    0.01 sec"],
    "ctest-summary": ["\t  7 - round_{n} (Failed)"],
    "jest": ["  ● billing › rounds {n}"],
    "jest-mark": ["    ✕ rounds {n} (4 ms)"],
    "vitest": [" FAIL  src/billing.test.ts > billing > rounds {n}"],
    "vitest-mark": ["   × rounds {n} 4ms"],
    "mocha": ["    3) rounds {n}"],
    "node-spec": ["✖ rounds {n} (1.1ms)"],
    "tap": ["not ok 9 - rounds {n}"],
    "prove": ["#   Failed test 'rounds {n}'"],
    "phpunit": ["3) BillingTest::testRounds{n}"],
    "junit4": ["3) rounds{n}(BillingTest)"],
    "junit5-tree": ["│     ├─ rounds{n}() ✘ expected: <3> but was: <2>"],
    "junit5-list": ["  JUnit Jupiter:BillingTest:rounds{n}()"],
    "surefire": ["[ERROR] rounds{n}(com.acme.BillingTest)  Time elapsed: 0.01 s  <<< FAILURE!"],
    "gradle": ["com.acme.BillingTest > rounds{n}() FAILED"],
    "rspec": ["rspec ./spec/billing_spec.rb:12 # Billing rounds {n}"],
    "rspec-numbered": ["  3) Billing rounds {n}"],
    "bracketed": ["[FAIL] test_round_{n}"],
    "bare": ["FAIL test_round_{n}"],
    "failed": ["FAILED test_round_{n}"],
    "mark": ["✗ rounds {n}"],
    "gcc": ["src/billing{n}.c:12:5: error: ‘total’ undeclared (first use in this function)"],
    "clang": ["src/billing{n}.c:12:5: error: use of undeclared identifier 'total'"],
    "rustc": ["error[E0425]: cannot find value `total` in this scope", "  --> src/billing{n}.rs:12:5"],
    "javac": ["Billing{n}.java:12: error: cannot find symbol"],
    "tsc": ["src/billing{n}.ts(12,5): error TS2304: Cannot find name 'total'."],
    "tsc-pretty": ["src/billing{n}.ts:12:5 - error TS2304: Cannot find name 'total'."],
    "go-build": ["./billing{n}.go:12:5: undefined: total"],
    "mypy": ["billing{n}.py:12: error: Name \"total\" is not defined  [name-defined]"],
    "ruff-concise": ["billing{n}.py:12:5: F821 Undefined name `total`"],
    "ruff": ["F821 Undefined name `total`", " --> billing{n}.py:12:5"],
    "eslint": ["/builds/acme/src/billing{n}.mjs", "  3:14  error  'total' is not defined  no-undef"],
    "shellcheck": ["billing{n}.sh:12:5: warning: total is referenced but not assigned. [SC2154]"],
}


def _evidence(where: Path, name: str, log: str) -> LogEvidence:
    (where / name).write_text(log)
    return evidence_of(where / name, None)


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[str], LogEvidence]]:
    """Each tool's recorded base output (its lines) and the evidence of its log on the base."""
    where, record = tmp_path_factory.mktemp("bases"), recorded()
    out = {}
    for tool in TOOLS:
        lines = record[tool.name, "base"].split("\n")
        out[tool.name] = lines, _evidence(where, tool.name, job_log(tool.shown, "\n".join(lines), MAIN))
    return out


def test_a_new_failure_line_of_any_format_anywhere_in_a_pre_existing_log_is_never_the_same_failure(
        bases: dict[str, tuple[list[str], LogEvidence]], tmp_path: Path) -> None:
    rng = random.Random(SEED)
    tools = {tool.name: tool for tool in TOOLS}
    wrong = []
    for draw in range(DRAWS):
        shape, name = rng.choice(sorted(FORMATS)), rng.choice(sorted(tools))
        lines, base = bases[name]
        at = rng.randint(0, len(lines))
        added = [line.format(n=rng.randint(100, 999)) for line in FORMATS[shape]]
        mine = _evidence(tmp_path, "mr.log", job_log(tools[name].shown, "\n".join([*lines[:at], *added, *lines[at:]]),
                                                     BRANCH))
        if same_failure(mine, base):
            wrong.append((draw, shape, name, at))
    assert wrong == []


def test_every_tool_s_own_output_under_another_runner_is_the_same_failure(
        bases: dict[str, tuple[list[str], LogEvidence]], tmp_path: Path) -> None:
    # The property's control: without the added line, each log is the base's failure.
    tools = {tool.name: tool for tool in TOOLS}
    differ = [name for name, (lines, base) in bases.items()
              if not same_failure(_evidence(tmp_path, "mr.log", job_log(tools[name].shown, "\n".join(lines), BRANCH)),
                                  base)]
    assert differ == []
