"""The three modes on small synthetic logs, gzip input and raw-file line numbering."""

import gzip

from hummingbird_agent import budgets
from hummingbird_agent.logs import Example, excerpt_lines, format_excerpt

FILLER = [f"[INFO] step {i}: compiling module_{i}.c" for i in range(200)]
FAILURE = [
    "src/core/main.c:42:7: error: 'cfg' undeclared (first use in this function)",
    "   42 |   cfg->x = 1;",
    "      |   ^~~",
    "make: *** [Makefile:12: build/main.o] Error 1",
]
EPILOGUE = ["Cleaning up project directory and file based variables", "ERROR: Job failed: exit code 2"]


def covered(excerpt) -> set[int]:
    return {n for first, last in excerpt.ranges for n in range(first, last + 1)}


def test_unsupervised_finds_the_compiler_error_near_the_end():
    lines = ["gcc -Werror -c a.c", "Tests run: 5, Failures: 0, Errors: 0"] + FILLER + FAILURE + EPILOGUE
    excerpt = excerpt_lines(lines)
    first = len(FILLER) + 3
    assert set(range(first, first + 3)) <= covered(excerpt)  # the diagnostic and its source snippet
    # `make: ***` and the runner's epilogue are consequences of the diagnostic, not its explanation.
    assert not covered(excerpt) & {first + 3, len(lines) - 1, len(lines)}
    assert 1 not in covered(excerpt) and 2 not in covered(excerpt)
    assert excerpt.total_lines == len(lines)
    assert excerpt.lines[0] == (excerpt.ranges[0][0], lines[excerpt.ranges[0][0] - 1])


def test_line_numbers_count_raw_newlines_despite_cr_and_ansi(tmp_path):
    raw = b"progress 1\rprogress 2\rdone\r\n" * 3 + b"\x1b[31mfatal: repository not found\x1b[0m\r\n" + b"bye\n"
    path = tmp_path / "job.log.gz"
    path.write_bytes(gzip.compress(raw))
    excerpt = excerpt_lines(str(path))
    assert excerpt.total_lines == 5
    assert 4 in covered(excerpt)
    assert dict(excerpt.lines)[4] == "fatal: repository not found"


def test_streaming_keeps_numbers_across_blocks(tmp_path):
    filler = b"x" * 99 + b"\n"
    count = budgets.EXCERPT_READ_BLOCK_BYTES * 3 // len(filler) + 7
    path = tmp_path / "big.log"
    path.write_bytes(filler * count + b"Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: bad\n")
    excerpt = excerpt_lines(path)
    assert excerpt.total_lines == count + 3
    assert {count + 3} <= covered(excerpt)
    assert dict(excerpt.lines)[count + 3] == "ValueError: bad"


def test_passing_mode_prefers_lines_the_passing_run_did_not_print():
    common = [f"2024-01-0{1 + i % 2}T10:00:0{i % 10}Z test_{i} ERROR-free ok in {i}.{i}s" for i in range(50)]
    noise_error = "error: retrying download (mirror flaky)"
    passing = [noise_error] + common + ["BUILD SUCCESS"]
    failure = ["AssertionError: expected 3, got 4", "    at check(test.js:10)", "BUILD FAILURE"]
    failing = [noise_error] + common + failure
    excerpt = excerpt_lines(failing, passing=passing)
    got = covered(excerpt)
    assert {52, 53} <= got
    assert 1 not in got
    assert excerpt.mode == "passing"


def test_example_mode_finds_the_shape_of_earlier_failures():
    chunk = "rake aborted!\nNo Rakefile found (looking for: rakefile, Rakefile)"
    examples = [Example(chunk, ("rake aborted!",), 6), Example(chunk, ("rake aborted!",), 6)]
    log = (
        ["error: something unrelated happened early"] + FILLER
        + ["rake aborted!", "No Rakefile found (looking for: rakefile, Rakefile, rakefile.rb)"]
        + ["(See full trace by running task with --trace)"] + [f"tail {i}" for i in range(4)]
    )
    excerpt = excerpt_lines(log, examples=examples)
    assert excerpt.mode == "examples"
    assert covered(excerpt) >= {202, 203}
    assert 1 not in covered(excerpt)


def test_max_lines_bounds_the_excerpt_and_format_numbers_lines():
    lines = FILLER + [f"FAILED test_{i} - AssertionError: boom" for i in range(100)]
    excerpt = excerpt_lines(lines, max_lines=5)
    assert sum(last - first + 1 for first, last in excerpt.ranges) <= 5
    text = format_excerpt(excerpt)
    first = excerpt.lines[0][0]
    assert text.splitlines()[0] == f"{first}: {lines[first - 1]}"


def test_a_log_without_failure_evidence_gives_an_empty_excerpt():
    excerpt = excerpt_lines(["all good"] * 10)
    assert excerpt.ranges == () or all(first >= 1 for first, _ in excerpt.ranges)
    assert "no failure lines" in format_excerpt(excerpt) or excerpt.lines


def test_passing_mode_keeps_every_new_block_and_the_frames_between():
    frames = [f"\tat org.junit.Runner.step{i}(Runner.java:{i})" for i in range(30)]
    downloads = [f"Downloaded from central: https://repo/x/lib-{i}.jar" for i in range(5)]
    passing = ["[INFO] Building"] + frames + ["[INFO] BUILD SUCCESS"]
    failing = (
        ["[INFO] Building"] + downloads
        + ["Tests run: 1, Failures: 0, Errors: 1 <<< ERROR!", "java.io.IOException: Cannot run program"] + frames
        + ["Caused by: java.io.IOException: error=2, No such file or directory"]
        + [f"[INFO] filler {i}" for i in range(100)]
        + ["[ERROR] Failed to execute goal surefire:test", "[INFO] BUILD FAILURE"]
    )
    excerpt = excerpt_lines(failing, passing=passing)
    got = covered(excerpt)
    first = len(downloads) + 2
    assert set(range(first, first + 33)) <= got  # the exception, all its frames and its cause
    assert len(failing) - 1 in got
    assert not got & set(range(2, 2 + len(downloads)))  # new but no failure evidence
    assert len(got) > budgets.EXCERPT_MAX_LINES - 30


def test_example_mode_prefers_the_short_chunk_shaped_like_the_examples_over_a_big_similar_block():
    # A long list of lines resembling the examples' body, but no line like their first line.
    listing = [f"  {i}. https://example.org/pkg/mode-{i}" for i in range(80)]
    chunk = ["> Links", "  1. [L12] 301 https://example.org/pkg/moved", "> Dupes", "  None"]
    examples = [
        Example("> Links\n  1. [L40] 301 https://example.org/pkg/old\n  2. [L90] 502 https://example.org/x\n"
                "> Dupes\n  None", ("Links",), 3),
        Example("> Links\n  1. [L7] 404 https://example.org/pkg/gone\n> Dupes\n  None", ("Links",), 3),
    ]
    log = FILLER[:50] + listing + ["checking links"] + chunk + ["done", "exit 1", "bye"]
    excerpt = excerpt_lines(log, examples=examples)
    start = 50 + len(listing) + 2
    # The chunk, widened by at most the line that follows it (the longest example has 5 lines).
    assert len(excerpt.ranges) == 1
    assert excerpt.ranges[0][0] == start and start + 3 <= excerpt.ranges[0][1] <= start + 4


def test_unsupervised_takes_the_first_error_block_of_the_failing_step_not_its_summary():
    passing_step = ["$ npm run lint", "checking error_pages.js", "The command \"npm run lint\" exited with 0."]
    failing_step = (
        ["$ npm test", "  PASS test/error-handler.test.js", "  1 failing", ""]
        + ["  1) api returns 404", "     Error: expected 200, got 404", "      at Context.<anonymous> (t.js:9:5)"]
        + ["", "npm ERR! Test failed.  See above for more details.", "npm ERR! code ELIFECYCLE"]
        + ["The command \"npm test\" exited with 1.", "", "Done. Your build exited with 1."]
    )
    lines = FILLER[:20] + passing_step + failing_step
    excerpt = excerpt_lines(lines)
    start = 20 + len(passing_step) + 5  # the `1) api returns 404` line
    assert set(range(start + 1, start + 3)) <= covered(excerpt)
    assert not covered(excerpt) & {21, 22, 23, len(lines) - 4, len(lines) - 3, len(lines)}


def test_unsupervised_without_cue_words_takes_the_last_output_of_the_failing_step():
    lines = FILLER[:30] + [
        "$ size-limit", "", "  Package size limit has exceeded by 934 B", "  Package size: 103.91 KB",
        "", "error Command failed with exit code 3.", "The command \"yarn test\" exited with 1.",
    ]
    assert excerpt_lines(lines).ranges == ((33, 34),)


def test_example_mode_widens_a_short_match_through_its_paragraph_to_the_examples_length():
    example = "Error: assertion failed in spec/a_spec.rb\n  expected: 1\n  got: 2\n\n  diff:\n  -1\n  +2"
    examples = [Example(example, ("assertion failed",), 4), Example(example, ("assertion failed",), 4)]
    failure = ["Error: assertion failed in spec/b_spec.rb", "  expected: 3", "  got: 4", "",
               "  (compared using ==)", "  at spec/b_spec.rb:9"]
    log = FILLER[:30] + failure + ["", "", "The command \"rspec\" exited with 1.", "Done. Your build exited with 1."]
    excerpt = excerpt_lines(log, examples=examples)
    assert covered(excerpt) == set(range(31, 37))  # the details past the blank line, not the wrap-up


def test_example_mode_adds_the_failing_step_pick_when_the_chunk_is_only_wrap_up():
    examples = [Example("The command \"make\" exited with 2.", ("exited",), 3)] * 2
    failure = ["src/a.c:3:1: error: expected ';' before '}' token", "    3 | }", "      | ^"]
    log = ["$ make"] + FILLER[:40] + failure + ["The command \"make\" exited with 2.", "", "bye"]
    excerpt = excerpt_lines(log, examples=examples)
    got = covered(excerpt)
    assert {42, 43, 44} <= got  # the compiler error of the failing step
    assert 45 in got  # and the chunk shaped like the examples
    assert excerpt_lines(log, examples=examples, max_lines=1).ranges == ((45, 45),)  # the chunk comes first


def test_example_mode_without_a_resembling_chunk_gives_the_step_pick_at_the_examples_length():
    unlike = "Segmentation fault (core dumped)\n" + "\n".join(f"  #{i} 0x0000 in frame_{i} ()" for i in range(5))
    examples = [Example(unlike, ("Segmentation fault",), 2)] * 2
    failure = ["src/a.c:3:1: error: expected ';' before '}' token", "", "  note: the statement above ends here"]
    log = ["$ make"] + FILLER[:20] + failure + ["The command \"make\" exited with 2."]
    got = covered(excerpt_lines(log, examples=examples))
    assert got == {22, 23, 24}  # the error and its note past the blank line, not the runner's end line


def test_npm_error_lines_explain_the_failure_but_npm_advice_does_not():
    lines = ["$ npm ci", "npm ERR! code ETIMEDOUT", "npm ERR! network request to https://registry.example/x failed",
             "npm ERR! A complete log of this run can be found in:", "ERROR: Job failed: exit code 1"]
    assert covered(excerpt_lines(lines)) == {2, 3}


def test_skipped_tests_and_lone_identifiers_are_not_failure_evidence():
    suite = ["PASS src/handled-error.test.js", "  handleAPIError", "    ✓ reports on 5** errors", "  wrapHandledError"]
    skips = [f"t95{i}-cvsimport.sh .......... skipped: cvs not found" for i in range(6)]
    failure = ["  2109 passing (1m)", "  1 failing", "", "  1) Check challenges", "     Error: the string is wrong"]
    end = ["The command \"npm test\" exited with 1."]
    log = ["$ npm test"] + suite + FILLER[:30] + skips + FILLER[:30] + failure + end
    got = covered(excerpt_lines(log))
    count = log.index("  1 failing") + 1
    assert {count, count + 2, count + 3} <= got  # the count line and the failure it counts, past the blank
    assert not got & set(range(1, count - 1))


def test_unsupervised_includes_the_shell_traced_command_right_before_its_error():
    failure = ["+t/validator --trace2_event_file=/tmp/x.json", "flag provided but not defined: -trace2_event_file"]
    end = ["Usage of t/validator:", "The command \"ci/run-tests.sh\" exited with 1."]
    log = ["$ ci/run-tests.sh"] + FILLER[:30] + failure + end
    got = covered(excerpt_lines(log))
    assert {32, 33} <= got and 31 not in got
    assert excerpt_lines(log, max_lines=1).ranges == ((33, 33),)  # the error first when the budget is short


def test_progress_lines_with_a_percentage_are_routine_the_failure_section_explains():
    progress = [f"tests/test_{i}.py::test_x PASSED [ {i}%]" for i in range(30)]
    progress[10] = "tests/test_10.py::test_match FAILED [ 10%]"
    details = ["=== FAILURES ===", "____ test_match ____", "E       fixture 'packages' not found", "",
               "=== 1 failed, 29 passed in 2.0 seconds ==="]
    log = ["$ pytest -v"] + progress + [""] + details + ["The command \"pytest -v\" exited with 1."]
    got = covered(excerpt_lines(log))
    assert 12 not in got and 35 in got  # the `E` line of the failure section, not the progress line
