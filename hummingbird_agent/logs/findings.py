"""What a failure consists of, as the tools report it: the failing tests a test runner names and the
diagnostics (file, code, message) a compiler, linter or type checker prints, each as a stable key.

A diagnostic's key leaves its line and column out, so a diagnostic that moved because the MR added lines
above it is still the same one; its message keeps only what `signature` keeps (numbers masked). A test's
key is its id as the runner prints it, with line numbers and volatile ids (hashes, long numbers) masked
but short numbers kept: `test_x[1]` and `test_x[2]` are two tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from hummingbird_agent.logs.clean import clean_line
from hummingbird_agent.logs.signature import signature

TEST, DIAGNOSTIC = "test", "diagnostic"

# One named group per runner's shape: the failing test's id (`lastgroup` says which matched). Each shape is the
# runner's own failure line, wherever it is in the log: a failing test the other run lacks is a new failure, even
# far above the log's end. Maven Surefire's and Gradle's shapes come from their report printers (their plugins
# cannot be fetched here to run them); the others are also tested on real output (tests/triage/real_tools.py).
_TEST = re.compile(
    r"(?:FAILED|ERROR) (?P<pytest>\S+(?:::\S+|\.py))(?: - .*)?$"  # pytest's short summary
    r"|_{3,} (?P<pytest_header>\S.*?) _{3,}$"  # pytest's section header of one failure
    r"|(?:FAIL|ERROR): (?P<unittest>\w+ \([\w.]+\))"  # unittest
    r"|\s*--- FAIL: (?P<go>\S+)"  # go test (subtests indented)
    r"|\s*FAIL\s+(?P<suite>[\w@-]*[./][\w./@-]*(?: > .+)?)(?:\s.*)?$"  # a go package, a jest or vitest file (> test)
    r"|(?:\[ERROR\] )?(?P<surefire>[\w.$]+\([\w.$]+\)|[\w$]+\.[\w$]+)\s.*<<< (?:FAILURE|ERROR)!"  # Maven
    r"|\[ERROR\]\s{2,}(?P<surefire_summary>[\w$]+\.[\w$]+(?:\[[^\]]*\])?):\d+\s"
    r"|(?:\[ERROR\] )?Tests run:.*<<< (?:FAILURE|ERROR)! - in (?P<surefire_class>\S+)"
    r"|\s*(?P<gradle>[\w.$]+ > .+?) FAILED$"  # Gradle
    r"|test (?P<cargo>\S+) \.\.\. FAILED$|---- (?P<cargo_output>\S+) stdout ----$"  # cargo test
    r"|(?P<cargo_quiet>[\w:]+) --- FAILED$"
    r"|\s*\d+/\d+ Test\s+#\d+: (?P<ctest>\S+) \.*\s*\*{3}(?:Failed|Timeout|Not Run|Exception)"  # ctest
    r"|\s+\d+ - (?P<ctest_summary>\S+) \((?:Failed|Timeout|Not Run|SEGFAULT|Subprocess aborted|Child aborted"
    r"|Exception|OTHER_FAULT|ILLEGAL|INTERRUPT|NUMERICAL|BUS_ERROR)\)$"
    r"|rspec (?P<rspec>\S+ # .+)$"
    r"|\s*● (?P<jest>.+ › .+)$"
    r"|\s*not ok \d+ (?:- )?(?P<tap>(?:(?! # (?i:TODO|SKIP)).)+)$"  # TAP (bats, node --test, prove -v)
    r"|#\s+Failed test (?:'(?P<tap_diagnostic>.+)'|(?P<tap_at>at \S+) line \d+\.)$"  # Test::More under prove
    r"|[\s│├└─]*(?P<junit_tree>[\w$]+\([^)]*\)) ✘"  # JUnit 5 console, tree
    r"|\s*JUnit (?:Jupiter|Vintage|Platform Suite):(?P<junit>\S+)$"  # its failure list
    # jest, vitest, node --test's spec, xcpretty: the test's name, not its message (`✗ testX, timed out after 10s`)
    r"|\s*[✗✕×✘✖] (?!\d+ problems? \()(?P<mark>.+?)(?:(?:, |: ).*| \(?\d+(?:\.\d+)? ?m?s\)?)?$"
    r"|\s*\[FAIL(?:ED)?\]:? (?P<bracketed>\S.*?)$"  # `[FAIL] name`
    r"|\s*FAIL(?:ED)?:?\s+(?P<named>[A-Za-z_][\w.:/#\[\]-]*)(?:\s.*)?$"  # `FAIL name`, `FAILED name`
    # a numbered failure: PHPUnit `1) Class::test`, JUnit 4 `1) test(Class)`, RSpec and mocha `  1) suite test`
    r"|\s*\d{1,4}\) (?P<numbered_id>[\w\\]+::\w+|\w+\([\w.$]+\))$|\s{2,}\d{1,4}\) (?P<numbered>\S.*?):?$"
)
_LINE_NUMBER = re.compile(r":\d+(?=[\s:]|$)")
_VOLATILE_ID = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b|\d{5,}", re.IGNORECASE)

# `path:line[:col]: rest` (gcc, clang, mypy, ruff concise, flake8, pylint, shellcheck -f gcc, javac, go vet)
# or `path(line,col): rest` (tsc, MSBuild). The path has an extension or a directory, no blanks.
_AT = re.compile(
    r"\s*(?P<path>(?:[A-Za-z]:)?[^\s:()\[\]\"'`]*[./][^\s:()\[\]\"'`]*)"
    r"(?::\d+(?::\d+)?:?|\(\d+(?:,\d+)?\):)\s+(?P<rest>\S.*)$"
)
# A path and a number alone are a stack frame or a progress line; a diagnostic also leads with a severity or
# a code (`error:`, `[warning]`, `F401`, `C0114:`) or ends with its rule (`[return-value]`, `[SC2086]`,
# `[-Wint-conversion]`, `(ineffassign)`).
_SEVERITY = r"(?i:fatal error|error|warning|note|info|information|hint|style|convention|refactor)"
_CLAIM = re.compile(
    rf"(?:- )?\[?{_SEVERITY}\b|[A-Z]{{1,5}}\d{{2,5}}\b"  # `- error TS2322:`: tsc --pretty
    r"|.*(?:\[[\w./:-]+\]|\((?:[a-z]+-)*[a-z]+\))$"
)
# A diagnostic printed over two lines, its location second (rustc, ruff's default format):
# `error[E0425]: cannot find value` or `F401 [*] \`os\` imported but unused`, then `  --> src/main.rs:3:5`.
_HEADLINE = re.compile(rf"(?:{_SEVERITY}(?:\[[\w-]+\])?:|[A-Z]{{1,5}}\d{{2,5}}\b)\s*\S")
# The Go compiler and go vet name neither a severity nor a rule, but always give a column (a panic's stack frame
# never does): `./app.go:5:13: undefined: z`, `vet: ./app.go:4:14: cannot use ...`.
_GO = re.compile(r"\s*(?:vet: )?(?P<path>\S+\.go):\d+:\d+: (?P<rest>\S.*)$")
# ESLint's default (stylish) report and its likes: a file's path on a line of its own, then one line per problem
# under it, `  3:14  error  'z' is not defined  no-undef`.
_FILE_ALONE = re.compile(r"(?:[A-Za-z]:)?[\w./\\@-]*[/\\.][\w./\\@-]*\.\w+")
_UNDER_FILE = re.compile(r"\s+\d+:\d+\s+(?P<rest>(?:error|warning)\s.*\S)$")
_CODE = re.compile(r"\b[A-Z]{1,5}\d{2,5}\b")
_LOCATION = re.compile(r"\s*--> (?P<path>[^\s:]+)(?::\d+){1,2}$")


@dataclass(frozen=True, slots=True)
class Finding:
    """One failing test or diagnostic: `kind` (TEST or DIAGNOSTIC) and its key."""

    kind: str
    key: str


def read(lines: Iterable[str]) -> Iterator[tuple[str, Finding | None]]:
    """Each line (cleaned) with the failing test or diagnostic it reports, None when neither; a headline
    whose location follows on the next line is reported with that line's file."""
    held: str | None = None
    under = ""  # the file whose problems the next lines list (ESLint's stylish report)
    for raw in lines:
        line = clean_line(raw)
        if under and (problem := _UNDER_FILE.match(line)):
            yield line, _diagnostic(under, problem["rest"])
            continue
        under = line if _FILE_ALONE.fullmatch(line) else ""
        if held is not None:
            where = _LOCATION.match(line)
            yield held, _diagnostic(where["path"], held) if where else None
            held = None
            if where:
                yield line, None
                continue
        if _HEADLINE.match(line) and not _AT.match(line):
            held = line
            continue
        yield line, finding(line)
    if held is not None:
        yield held, None


def finding(line: str) -> Finding | None:
    """The failing test or the one-line diagnostic a cleaned line reports."""
    if (test := _TEST.match(line)) is not None and test.lastgroup:
        key = _VOLATILE_ID.sub("<ID>", _LINE_NUMBER.sub("", test[test.lastgroup].strip()))
        return Finding(TEST, key)
    at = _AT.match(line)
    if at is not None and _CLAIM.match(at["rest"]) or (at := _GO.match(line)) is not None:
        return _diagnostic(at["path"], at["rest"])
    return None


def _diagnostic(path: str, message: str) -> Finding:
    # The rule's code is kept whole in front (`SC2086` and `SC2164` are two rules; `signature` masks digits).
    codes = "".join(f"{code} " for code in _CODE.findall(message))
    return Finding(DIAGNOSTIC, f"{signature(path.removeprefix('./'))} {codes}{signature(message)}")


def is_diagnostic(line: str) -> bool:
    """Whether a cleaned line reports a diagnostic by itself (without the next line)."""
    return (found := finding(line)) is not None and found.kind == DIAGNOSTIC
