"""The unsupervised pick's general mechanisms, each on a small log where it decides the outcome."""

from hummingbird_agent import budgets
from hummingbird_agent.logs import excerpt_lines
from hummingbird_agent.logs.cues import cue_score
from hummingbird_agent.logs.steps import unstamped

FILLER = [f"[INFO] step {i}: copying resource_{i}.txt" for i in range(120)]


def covered(excerpt) -> set[int]:
    return {n for first, last in excerpt.ranges for n in range(first, last + 1)}


def test_without_runner_step_marks_the_end_block_and_the_last_lines_are_shown_not_an_earlier_error():
    # A Jenkins-style log: no `exited with` marks. An earlier command printed errors and went on.
    early = [f"[ERROR] examples/lang/Entities.java:[{60 + i},29] unmappable character for encoding UTF-8"
             for i in range(30)]
    failure = ["[ERROR] COMPILATION ERROR :", "[ERROR] src/main/java/LibParser.java:[23,29] cannot find symbol",
               "  symbol:   class ImportScanner"]
    end = ["[INFO] BUILD FAILURE", "[INFO] Total time: 9.4 s"] + [f"[INFO] summary {i}" for i in range(12)]
    end += ["Build step 'Execute shell' marked build as failure", "Finished: FAILURE"]
    log = FILLER[:20] + early + FILLER + failure + end
    got = covered(excerpt_lines(log))
    start = 20 + len(early) + len(FILLER) + 1
    assert set(range(start, start + 3)) <= got
    last = len(log)
    assert set(range(last - budgets.EXCERPT_UNANCHORED_TAIL_LINES + 1, last + 1)) <= got
    assert not got & set(range(21, 21 + len(early)))


def test_without_step_marks_the_last_lines_fill_the_room_the_pick_leaves():
    log = FILLER[:50] + ["error: disk quota exceeded", "", ""] + FILLER[:47]
    assert excerpt_lines(log, max_lines=4).ranges == ((51, 51), (98, 100))
    assert excerpt_lines(FILLER[:100]).ranges == ()  # no evidence, no guess: the caller keeps head and tail


def test_with_runner_step_marks_no_tail_is_added():
    log = ["$ make"] + FILLER[:40] + ["src/a.c:3:1: error: expected ';'", "", ""] + FILLER[:30]
    log += ["The command \"make\" exited with 2.", "", "Done. Your build exited with 1."]
    assert excerpt_lines(log).ranges == ((42, 42),)


def test_a_wall_of_one_repeated_complaint_weighs_like_one_line():
    failure = ["test_upload ... FAILED", "AssertionError: expected 200, got 500"]
    # A logger repeating one line many times right before the step's end: without counting it once,
    # its sum would outweigh the real failure more than threefold.
    wall = [f"ERROR: Stream {i} bad state: write to dead stream" for i in range(25)]
    log = ["$ pytest"] + FILLER[:20] + failure + FILLER[:40] + wall + ["The command \"pytest\" exited with 1."]
    got = covered(excerpt_lines(log))
    assert {22, 23} <= got
    assert not got & set(range(64, 64 + len(wall)))


def test_a_run_summary_is_weak_evidence_so_the_failure_it_counts_is_chosen():
    assert cue_score("[info] Tests: succeeded 14, failed 2, canceled 0, ignored 0") <= 1.0
    assert cue_score("[error] Failed: Total 16, Failed 2, Errors 0, Passed 14") <= 1.0
    assert cue_score("Requests over the limit are dropped *** FAILED ***") == 3.0
    assert cue_score("AssertionError: expected 200, got 404") == 3.0  # numbers of a diagnostic are not counts
    failure = ["[info] - Requests over the limit are dropped *** FAILED ***",
               "[info]   11 did not equal 10 (T.scala:72)"]
    summary = ["[info] Suites: completed 4, aborted 0", "[info] Tests: succeeded 14, failed 2, canceled 0",
               "[error] Failed: Total 16, Failed 2, Errors 0, Passed 14", "[error] Failed tests: 3, errors: 2"]
    log = ["$ ./sbt test"] + FILLER[:10] + failure + FILLER[:30] + summary
    log += ["The command \"./sbt test\" exited with 1."]
    got = covered(excerpt_lines(log))
    assert 12 in got
    assert not got & set(range(44, 48))


def test_error_words_inside_names_and_build_progress_lines_are_not_evidence():
    assert cue_score("checking miniupnpc/upnperrors.h usability... yes") == 0.0
    assert cue_score("downloading quick-error v1.2.2") == 0.0
    assert cue_score("error: linking failed") > 0
    progress = ["   Compiling quick-error v1.2.2", "[141 of 164] Compiling Language.PureScript.Ide.Error"]
    failure = ["error[E0463]: can't find crate for `fontconfig`", "", ""]
    log = ["$ cargo build"] + progress + FILLER[:60] + failure + FILLER[:5]
    log += ["The command \"cargo build\" exited with 101."]
    assert covered(excerpt_lines(log)) == {64}


def test_a_retried_command_is_explained_by_its_first_failed_attempt():
    attempt = ["java.lang.RuntimeException: unsupported Java version: 11",
               "\tat org.jruby.Ruby.newInstance(Ruby.java:266)"]
    log = ["$ travis_retry bundle exec push"] + attempt + FILLER[:10]
    log += ["The command \"bundle exec push\" failed. Retrying, 2 of 3.", ""] + attempt + ["Error: push failed"] * 3
    log += ["The command \"bundle exec push\" failed 3 times."]
    got = covered(excerpt_lines(log))
    assert {2, 3} <= got
    assert not got & set(range(16, len(log) + 1))


def test_a_failure_reported_again_with_its_details_is_shown_by_the_detailed_report():
    # Printed as the tests run, then again in the run's failure report with the assertion's source.
    inline = ["    ✗ testThatInvalidURLThrows, XCTAssertTrue failed", "", "    ✓ testThatRetryWorks (0.2 seconds)"]
    report = ["Alamofire_Tests.SessionTestCase", "  testThatInvalidURLThrows, XCTAssertTrue failed",
              "  /Users/travis/build/Tests/SessionTests.swift:550", "  if let error = response?.error {",
              "      XCTAssertTrue(error.isInvalidURLError)", "  }", ""]
    log = ["$ xcodebuild test"] + FILLER[:10] + inline + FILLER[:40] + report + FILLER[:40]
    log += ["The command \"xcodebuild test\" exited with 65."]
    got = covered(excerpt_lines(log))
    start = 1 + 10 + len(inline) + 40 + 2  # the report's `testThatInvalidURLThrows` line
    assert set(range(start, start + 5)) <= got
    assert 12 not in got


def test_a_failure_header_grows_across_blank_lines_into_its_indented_details():
    failure = [" FAIL  test/prefixes.test.js (11.4s)", "  ● prevents doubling prefixes", "",
               "    expect(received).toEqual(expected)", "", "    Expected value to equal:",
               "      \".a { grid-row: 5 }\""]
    log = ["$ jest"] + FILLER[:30] + failure + ["", "Test Suites: 1 failed, 3 passed, 4 total"]
    log += ["The command \"jest\" exited with 1."]
    got = covered(excerpt_lines(log))
    assert set(range(32, 32 + len(failure))) <= got


def test_a_later_block_naming_only_the_same_exception_class_is_not_a_report_of_the_same_failure():
    cause = ["java.lang.IllegalStateException: config file missing", "", ""]
    later = ["ERROR: shutdown hook saw java.lang.IllegalStateException", "    pool-1 stopped", "    pool-2 stopped",
             "    pool-3 stopped", "    pool-4 stopped", "", ""]
    log = ["$ java -jar app.jar"] + FILLER[:10] + cause + FILLER[:40] + later + FILLER[:40]
    log += ["The command \"java -jar app.jar\" exited with 1."]
    assert covered(excerpt_lines(log)) == {12}


def test_a_timestamped_log_is_read_past_its_stamps_so_blank_lines_end_the_failure_block():
    # A downloaded GitHub Actions log: job and step columns, then a timestamp, on every line (blank ones too).
    body = ["##[group]Run ./gradlew build"] + FILLER[:30] + [
        "> Task :core:test FAILED",
        "LogDifferTest > parsesGithubLogs() FAILED",
        "    java.lang.IllegalArgumentException at LogDifferTest.java:61",
        "",
        "6 actionable tasks: 6 executed",
        "> There were failing tests. See the report at: file:///build/reports/tests/test/index.html",
        "> Run the build with a fresh daemon to see more output.",
    ] + FILLER[:8] + ["##[error]Process completed with exit code 1."]
    log = [f"build\tgradle build\t2021-12-01T13:01:{i // 10:02d}.{i:07d}Z {line}" for i, line in enumerate(body)]
    got = covered(excerpt_lines(log))
    assert {33, 34} <= got  # the failed test and its exception
    assert not got & set(range(36, len(log) + 1))  # the output after the blank line, the runner's end


def test_a_timeout_setting_is_not_a_timeout():
    assert cue_score(" > git fetch --tags https://example.org/repo.git # timeout=10") == 0.0
    assert cue_score("Tests timed out after 600 s") > 0 and cue_score("ERROR: timeout waiting for the database") > 0
    # A Jenkins log: the SCM plugin prints its settings before every git command; the build fails at its end.
    checkout = [f" > git {cmd} # timeout=10" for cmd in ("init /w", "--version", "fetch --tags origin", "config a b",
                                                          "rev-parse HEAD", "config core.sparse", "checkout -f c0ffee")]
    failure = ["[ERROR] Failed to execute goal on project flow: Could not resolve dependencies for project flow"]
    log = checkout + FILLER[:40] + failure + ["Build step 'Execute shell' marked build as failure", "Finished: FAILURE"]
    got = covered(excerpt_lines(log))
    assert len(checkout) + 41 in got
    assert not got & set(range(1, len(checkout) + 1))


def test_an_indented_report_is_shown_with_the_header_line_above_it():
    # A linter names the file once, then reports each problem indented under it.
    report = ["/home/ci/app/src/components/MenuLinks.js",
              "  28:14  error  Replace `·to='x'` with `to='x'`  prettier/prettier"]
    log = ["$ npm run lint"] + FILLER[:30] + report + ["", "✖ 1 problem (1 error, 0 warnings)"]
    log += ["The command \"npm run lint\" exited with 1."]
    got = covered(excerpt_lines(log))
    assert {32, 33} <= got
    assert not got & set(range(1, 32))


def test_a_section_banner_is_weak_evidence_so_the_failure_under_it_is_chosen():
    assert cue_score("=================================== FAILURES ===================================") <= 1.0
    assert cue_score("E       AssertionError: Missing rule in README.md") == 3.0
    progress = [f"tests/test_{i}.py::test_case PASSED [ {i}%]" for i in range(40)]
    section = ["", "=================================== FAILURES ===================================",
               "________________________________ test_readme _________________________________", "",
               "    def test_readme(source_root):", ">       assert rule.stem in readme",
               "E       AssertionError: Missing rule \"shell_alias\" in README.md",
               "E       assert 'shell_alias' in '# The Fuck'", "", "tests/test_readme.py:11: AssertionError",
               "=================== 1 failed, 40 passed in 12.03 seconds ===================="]
    log = ["$ pytest -v"] + progress + section + ["The command \"pytest -v\" exited with 1."]
    got = covered(excerpt_lines(log))
    assert {48, 49} <= got  # the assertion the section reports
    assert not got & set(range(1, 43))  # neither the passing tests nor the banner alone


def test_a_complaint_the_successful_steps_printed_too_is_not_what_failed():
    benign = "ERROR: svgo worker: `svgo` not found; please provide proper binary or disable this worker"
    setup = ["$ bin/rake assets", benign] + FILLER[:10] + ["The command \"bin/rake assets\" exited with 0."]
    tests = ["$ bin/rspec", "Randomized with seed 43565", benign] + FILLER[:30] + [
        "Failures:", "", "  1) DistributedMutex allows only one lock at a time",
        "     Failure/Error: expect(x).to eq(10)", "       expected: 10", "            got: 7", "",
        "13107 examples, 1 failure, 3 pending", "The command \"bin/rspec\" exited with 1."]
    log = setup + tests
    got = covered(excerpt_lines(log))
    failure = log.index("  1) DistributedMutex allows only one lock at a time") + 1
    assert {failure, failure + 1} <= got
    assert log.index(benign, len(setup)) + 1 not in got


def test_stack_frames_under_a_logger_tag_do_not_outweigh_the_report_before_them():
    # sbt tags every line of stderr `[error]`: the frames of the plugin's exception carry the tag too.
    report = [f"[error]  * the type hierarchy of class akka.msg.Check{i} is different in current version"
              for i in range(3)]
    trace = ["[error] java.lang.RuntimeException: akka-cluster: Binary compatibility check failed!"]
    trace += [f"[error] \tat sbt.Execute.work{i}(Execute.scala:{200 + i})" for i in range(20)]
    compiling = [f"[info] Compiling {i} Scala sources to /build/akka-{i}/target/classes ..." for i in range(10)]
    log = ["$ sbt mimaReportBinaryIssues"] + FILLER[:20] + report + compiling + trace
    log += ["The command \"sbt mimaReportBinaryIssues\" exited with 1."]
    got = covered(excerpt_lines(log))
    assert {22, 23, 24} <= got
    assert not got & set(range(36, 56))  # the frames


def test_only_a_log_whose_every_line_is_stamped_is_read_past_its_stamps():
    stamped = {n: f"2024-05-01T12:00:{n:02d}.5Z 01O line {n}" for n in range(1, 41)}
    assert unstamped(stamped)[7] == "line 7"
    # A tool's own log lines carry dates too, but the runner's lines between them do not: kept as they are.
    mixed = {n: f"2024-05-01T12:00:{n:02d}Z [INFO] built {n}" if n % 3 else f"+ make {n}" for n in range(1, 41)}
    assert unstamped(mixed) == mixed
