"""The failure lines of each common test runner and compiler, as findings keyed by test id or by file and
message. Maven Surefire's and Gradle's shapes are taken from their report printers' source (their plugins are
fetched from Maven Central, which this machine cannot reach, so they are not run in tests/triage/real_tools.py)."""

from __future__ import annotations

import pytest

from hummingbird_agent.logs.findings import DIAGNOSTIC, TEST, Finding, finding, read

TESTS = {
    "test tests::loads ... FAILED": "tests::loads",  # cargo test
    "---- tests::loads stdout ----": "tests::loads",
    "tests::loads --- FAILED": "tests::loads",  # cargo test -q (newer cargo)
    "1/3 Test #1: parses ...........................***Failed    0.00 sec": "parses",  # ctest
    "\t  1 - parses (Failed)": "parses",
    "    ✕ parses (9 ms)": "parses",  # jest
    " FAIL  src/app.test.ts > parser > parses": "src/app.test.ts > parser > parses",  # vitest
    "   × parses 3ms": "parses",
    "✖ parses (1.2ms)": "parses",  # node --test, spec reporter
    "✗ testCancels, Asynchronous wait failed: Exceeded timeout of 10 seconds": "testCancels",  # xcpretty
    "    not ok 2 - loads": "loads",  # node --test, TAP, a subtest
    "#   Failed test 'parses'": "parses",  # Test::More under prove
    "1) AppTest::testParses": "AppTest::testParses",  # PHPUnit
    "1) parses(AppTest)": "parses(AppTest)",  # JUnit 4
    "│     ├─ parses() ✘ expected: <13> but was: <12>": "parses()",  # JUnit 5 console
    "  JUnit Jupiter:AppTest:parses()": "AppTest:parses()",
    "  1) parser parses": "parser parses",  # RSpec, mocha
    "[FAIL] test_invoice_rounding": "test_invoice_rounding",
    "FAIL test_invoice_rounding": "test_invoice_rounding",
    "FAILED test_invoice_rounding": "test_invoice_rounding",
    # Maven Surefire (DefaultReporter / TestSetStats) and Gradle (TestEventLogger)
    "[ERROR] testParse(com.acme.CoreTest)  Time elapsed: 0.01 s  <<< FAILURE!": "testParse(com.acme.CoreTest)",
    "[ERROR]   CoreTest.testParse:41 expected:<13> but was:<12>": "CoreTest.testParse",
    "com.acme.CoreTest > parsesVersions() FAILED": "com.acme.CoreTest > parsesVersions()",
}
NOT_A_TEST = ["FAILED (failures=2)", "FAIL", "FAILURES!", "Failed 2/3 subtests", "    not ok 3 - later # TODO not yet",
              "Tests: 3, Assertions: 3, Failures: 2.", "1) Install the dependencies"]
DIAGNOSTICS = {
    "./app.go:5:13: undefined: z": "app.go undefined: z",  # go build
    "vet: ./app.go:4:14: cannot use x (variable of type int) as string value":
        "app.go cannot use x (variable of type int) as string value",
    "app.ts:2:9 - error TS2322: Type 'string' is not assignable to type 'number'.":
        "app.ts TS2322 - error TS<N>: Type 'string' is not assignable to type 'number'.",  # tsc --pretty
    "app.ts(2,9): error TS2322: Type 'string' is not assignable to type 'number'.":
        "app.ts TS2322 error TS<N>: Type 'string' is not assignable to type 'number'.",
    "App.java:3: error: cannot find symbol": "App.java error: cannot find symbol",  # javac
}


@pytest.mark.parametrize("line", sorted(TESTS))
def test_each_runner_s_failure_line_names_its_test(line: str) -> None:
    assert finding(line) == Finding(TEST, TESTS[line])


@pytest.mark.parametrize("line", NOT_A_TEST)
def test_summaries_counts_and_todo_tests_name_no_test(line: str) -> None:
    assert finding(line) is None


@pytest.mark.parametrize("line", sorted(DIAGNOSTICS))
def test_each_compiler_s_diagnostic_is_keyed_by_file_and_message(line: str) -> None:
    assert finding(line) == Finding(DIAGNOSTIC, DIAGNOSTICS[line])


def test_a_go_stack_frame_and_a_test_s_own_message_are_no_diagnostic() -> None:
    for line in ("\t/usr/local/go/src/runtime/panic.go:838 +0x207", "    app_test.go:7: parse: got 12, want 13"):
        assert finding(line) is None


def test_eslint_s_stylish_report_keys_each_problem_by_the_file_above_it() -> None:
    lines = ["/builds/app/src/app.mjs", "  2:9   error  'y' is assigned a value but never used  no-unused-vars",
             "", "✖ 1 problem (1 error, 0 warnings)", "  2:9   error  not under a file  no-x"]
    assert [found for _, found in read(lines) if found] == [
        Finding(DIAGNOSTIC, "/builds/app/src/app.mjs error 'y' is assigned a value but never used no-unused-vars")]
