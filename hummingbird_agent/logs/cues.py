"""General failure evidence in one cleaned log line, for the unsupervised mode and as a prior.

Rules are about tools in general (compilers, test runners, package managers, shells, CI runners),
never about one project.
"""

from __future__ import annotations

import re

# Literals whose presence makes a line worth scoring, matched case-insensitively on the raw bytes. Every
# line holding one is scored in Python, so the list is short: these stems cover the tools' own words for
# failure; lines with only weaker words are reached as context of these.
CUE_LITERALS: tuple[bytes, ...] = (
    b"err", b"fail", b"fatal", b"exception", b"panic", b"abort", b"traceback", b"exit",
    b"undefined", b"segmentation", b"not ok", "✗".encode(), "❌".encode(),
)

# Branches start with literals where possible: the regex engine then skips ahead at C speed.
_STRONG = re.compile(
    r"(?:error|Error|ERROR)(?:\[[\w-]+\])?\s?:"  # error: / Error: / error[E0463]:
    r"|(?:FAILED|FAILURES?|FAIL|ERRORS?|FATAL|ABORTING)\b"
    r"|Traceback \(most recent call last\)|Exception in thread|panicked at|npm ERR!"
    r"|(?:Error|Exception|Failure)\b(?::|$)"
    r"|aborted!|exited with (?:code )?[1-9]|exit (?:code|status):? [1-9]|non-zero exit"
    r"|make(?:\[\d+\])?: \*\*\*|Segmentation fault|core dumped|Killed\b"
    r"|[✗✘❌]|not ok\b"
    r"|[1-9]\d* (?:failed|failing|failures?|errors?)\b|(?:Failures|Errors|Failed): [1-9]"
    r"|undefined reference|not defined\b|cannot find|[Cc]ould not"
)
# The lower-case words count only as words of their own: inside a name (`quick-error`, `upnperrors.h`,
# `libfoo.failure`) they name a package or a file.
_MEDIUM = re.compile(
    r"(?<![\w.-])(?:error|errors|fatal|failed|failure|failing|fails|aborted|timed out|timeout(?!=))\b"
    r"|No such file or directory|command not found|not found\b|cannot\b|can't\b|[Uu]nable to"
    r"|assert|expected\b.*\b(?:got|but|actual|was|received)\b|mismatch"
    r"|denied\b|violations?\b|unresolved|Exception\b"
)
# `_STRONG` with every branch starting with a literal (groups distributed, `[1-9]` spelled out): the same
# lines match, and the search skips in C the positions no branch can start at, instead of trying every
# branch at every position of a long line.
_X = r"(?:failed|failing|failures?|errors?)\b"
_STRONG_FAST = re.compile(
    r"error(?:\[[\w-]+\])?\s?:|Error(?:\[[\w-]+\])?\s?:|ERROR(?:\[[\w-]+\])?\s?:"
    r"|FAILED\b|FAILURES?\b|FAIL\b|ERRORS?\b|FATAL\b|ABORTING\b"
    r"|Traceback \(most recent call last\)|Exception in thread|panicked at|npm ERR!"
    r"|Error\b(?::|$)|Exception\b(?::|$)|Failure\b(?::|$)"
    r"|aborted!|exited with (?:code )?[1-9]|exit (?:code|status):? [1-9]|non-zero exit"
    r"|make(?:\[\d+\])?: \*\*\*|Segmentation fault|core dumped|Killed\b|✗|✘|❌|not ok\b"
    + "".join(f"|{digit}\\d* {_X}" for digit in "123456789")
    + r"|Failures: [1-9]|Errors: [1-9]|Failed: [1-9]"
    r"|undefined reference|not defined\b|cannot find|Could not|could not"
)
# Evidence that a cue word is benign: zero counts, compiler flags, file names, option names.
_BENIGN = re.compile(
    r"\b0 (?:errors?|failures?|failed|failing)\b|\b(?:Failures|Errors|Failed|failed|errors?): 0\b"
    r"|-W(?:no-)?error|--\w*(?:fail|error)\w*|\berror_?\w*\.\w{1,4}\b|\bset -e\b"
    r"|\|\| (?:true|exit)|ignor(?:e|ing)|\bif\b.*\bthen\b|retry|retrying|warning",
    re.IGNORECASE,
)
# `_BENIGN` for an ASCII line once lower-cased (ignoring ASCII case is lowering), every branch starting with a
# literal as in `_STRONG_FAST` (`\b` before a word is a look-behind after its first character).
_BENIGN_LOWER = re.compile(
    r"0(?<!\w0) (?:errors?|failures?|failed|failing)\b"
    r"|f(?<!\wf)ailures: 0\b|e(?<!\we)rrors: 0\b|f(?<!\wf)ailed: 0\b|e(?<!\we)rrors?: 0\b"
    r"|-w(?:no-)?error|--\w*(?:fail|error)\w*|e(?<!\we)rror_?\w*\.\w{1,4}\b|s(?<!\ws)et -e\b"
    r"|\|\| (?:true|exit)|ignor(?:e|ing)|i(?<!\wi)f\b.*\bthen\b|retry|retrying|warning"
)
# A lone lower-camel-case identifier (`handleAPIError`) is a test group's or a function's name, not a diagnostic.
_IDENTIFIER = re.compile(r"\s*[a-z]+[A-Z]\w*\s*")
# A count of test or run outcomes (`failed 2`, `Errors: 0`, `16 tests`). A line with two or more is a run's
# summary (`Tests: succeeded 14, failed 2, canceled 0`): it says that something failed, not what, so it is
# weak evidence and the failure it counts, printed earlier, can be chosen over it. Other numbers
# (`expected 200, got 404`, `line 12`) are details of a diagnostic, not counts.
_OUTCOME = (
    r"(?:pass(?:ed|ing|es)?|fail(?:ed|ing|ures?)?|errors?|skipped|succeeded|tests?|total|ignored|pending"
    r"|cancel+ed|aborted|completed|run)"
)
_COUNT = re.compile(rf"\b{_OUTCOME}:? \d+\b|\b\d+ {_OUTCOME}\b", re.IGNORECASE)
_SUMMARY_SCORE = 1.0
# A banner heading a section (`=== FAILURES ===`, `--- ERRORS ---`) says, like a summary, that failures
# follow, not what they are: the section's lines explain them.
_BANNER = re.compile(r"\s*([=_\-*#~])\1\1.*\1\1\1\s*$")
# Lines a CI runner prints after every failed job; evidence of failure, but never its explanation.
_EPILOGUE = re.compile(
    r"^(?:Done\. Your build exited with|ERROR: Job failed|Cleaning up|Finished: FAILURE"
    r"|Build step '.*' marked build as failure|Uploading artifacts)"
)


# What the rules above see of a number: whether it starts with 0, which digits are 0 (`Failures: 0`,
# `exit code 1`, `3 failed`), and its length up to 5 (`error.log1` is a file name whose extension has at
# most 4 characters). So in a cache key digits 1-9 read as 1 and past the first non-zero digit a number
# is cut to 5 digits: lines that differ only there (timestamps, durations, ids) score the same.
_NON_ZERO_DIGITS = str.maketrans("23456789", "11111111")
_LONG_NUMBER = re.compile(r"1[01]{4,}")


def cached_cue_score(cache: dict[str, float], line: str) -> float:
    """`cue_score` memoised in `cache` (the caller's, bounded here): build logs repeat line shapes."""
    if len(line) < 3:  # the one rule on a line's length, decided before numbers are shortened
        return 0.0
    key = _LONG_NUMBER.sub("11111", line.translate(_NON_ZERO_DIGITS))
    value = cache.get(key)
    if value is None:
        if len(cache) >= 4096:
            cache.clear()
        value = cache[key] = cue_score(line)
    return value


def cue_score(line: str) -> float:
    """Failure evidence of one cleaned line: 0 (none) .. 3 (a diagnostic, a failed test, a crash)."""
    if not line or len(line) < 3 or _IDENTIFIER.fullmatch(line):
        return 0.0
    strong = _STRONG_FAST.search(line) is not None
    if not strong and _MEDIUM.search(line) is None:
        return 0.0
    value = 3.0 if strong else 1.5
    if _benign(line):
        value -= 1.5
    if _EPILOGUE.search(line):
        value = min(value, 0.5)
    elif len(_COUNT.findall(line)) >= 2 or _BANNER.match(line):
        value = min(value, _SUMMARY_SCORE)
    return max(value, 0.0)


def _benign(line: str) -> bool:
    if line.isascii():
        return _BENIGN_LOWER.search(line.lower()) is not None
    return _BENIGN.search(line) is not None
