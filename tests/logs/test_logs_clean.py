"""Cleaning and signatures: what a terminal shows, with line numbers untouched."""

from hummingbird_agent.logs import clean_line, signature
from hummingbird_agent.logs.clean import decode_clean


def test_ansi_colours_and_cursor_codes_are_removed():
    assert clean_line("\x1b[31;1mERROR\x1b[0m: boom\x1b[0K") == "ERROR: boom"
    assert clean_line("\x1b[?1h\x1b=\x1b[?1l\x1b>insert-mode/digraph   FAIL") == "insert-mode/digraph   FAIL"


def test_cr_progress_keeps_what_the_terminal_shows():
    assert clean_line("Progress (1): 2.7/3.8 kB\rProgress (1): 3.8 kB    \rDownloaded x.pom") == "Downloaded x.pom"
    assert clean_line("build ok\r\r") == "build ok"
    assert clean_line("\r\r") == ""


def test_gitlab_section_markers_are_removed():
    start = "\x1b[0Ksection_start:1560896352:build_step[collapsed=true]\r\x1b[0K\x1b[0;36mBuilding\x1b[0m"
    end = "\x1b[0Ksection_end:1560896353:build_step\r\x1b[0K"
    assert clean_line(start) == "Building"
    assert clean_line(end) == ""


def test_invalid_utf8_is_replaced_not_fatal():
    assert decode_clean(b"bad \xff byte error:") == "bad \ufffd byte error:"


def test_signature_masks_volatile_tokens():
    one = signature("2024-01-02T03:04:05.123Z Took 1.2s in /tmp/pytest-of-ci/x1/f.txt at 7847c114ab")
    two = signature("2025-06-07T08:09:10Z Took 13 s in /tmp/pytest-of-ci/x9/f.txt at 0f3e2d1c99")
    assert one == two == "<TS> Took <DUR> in <TMP> at <HEX>"
    assert signature("id 550e8400-e29b-41d4-a716-446655440000, 3 of 12 done") == "id <UUID>, <N> of <N> done"


def test_signature_keeps_words_that_identify_the_error():
    assert signature("\x1b[31merror[E0463]\x1b[0m: can't find crate for `fontconfig`") == (
        "error[E<N>]: can't find crate for `fontconfig`"
    )
