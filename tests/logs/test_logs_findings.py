"""Failing tests and diagnostics read from log lines: the shapes tools print, and the shapes that only look alike."""

from __future__ import annotations

from hummingbird_agent.logs.findings import DIAGNOSTIC, TEST, Finding, finding, read


def test_a_path_and_a_number_alone_are_not_a_diagnostic() -> None:
    for line in ("Compiling foo.c:12", "  at Object.<anonymous> (/app/src/x.test.js:12:5)",
                 '  File "app/x.py", line 3, in f', "\t/usr/local/go/src/runtime/panic.go:838 +0x207",
                 "/app/lib/x.rb:12:in `foo'", "tests/test_core.py:41: AssertionError",
                 "src/app.py:12: DeprecationWarning: foo is deprecated", "Fetched 12.3 MB in 2s (6.1 MB/s)"):
        assert finding(line) is None, line


def test_a_diagnostic_key_keeps_file_code_and_message_but_not_its_position() -> None:
    one = finding("src/app.py:10:5: F841 Local variable `y` is assigned to but never used")
    moved = finding("src/app.py:14:5: F841 Local variable `y` is assigned to but never used")
    other_rule = finding("src/app.py:10:5: F842 Local variable `y` is assigned to but never used")
    other_file = finding("src/lib.py:10:5: F841 Local variable `y` is assigned to but never used")
    assert one == moved == Finding(DIAGNOSTIC, "src/app.py F841 F<N> Local variable `y` is assigned to "
                                                                 "but never used")
    assert len({one, other_rule, other_file}) == 3


def test_a_headline_with_its_location_on_the_next_line_is_one_diagnostic_of_that_file() -> None:
    lines = ["error[E0425]: cannot find value `y` in this scope", "  --> src/main.rs:3:12", "  |"]
    assert [f for _, f in read(lines) if f] == [Finding(DIAGNOSTIC, "src/main.rs E0425 error[E<N>]: cannot find "
                                                                    "value `y` in this scope")]


def test_each_runner_names_its_failing_test() -> None:
    ids = {
        "FAILED tests/test_core.py::test_parse[1.2] - AssertionError: x": "tests/test_core.py::test_parse[1.2]",
        "--- FAIL: TestParse/empty (0.00s)": "TestParse/empty",
        "FAIL: test_parse (tests.test_core.CoreTest.test_parse)": "test_parse (tests.test_core.CoreTest.test_parse)",
        "[ERROR] testParse(com.acme.CoreTest)  Time elapsed: 0.01 s  <<< FAILURE!": "testParse(com.acme.CoreTest)",
        "rspec ./spec/core_spec.rb:12 # Core parses versions": "./spec/core_spec.rb # Core parses versions",
        "  ● Core › parses versions": "Core › parses versions",
        "not ok 3 - parses versions": "parses versions",
        "com.acme.CoreTest > parsesVersions FAILED": "com.acme.CoreTest > parsesVersions",
    }
    assert {line: finding(line) for line in ids} == {line: Finding(TEST, key) for line, key in ids.items()}
