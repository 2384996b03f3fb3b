"""The runaway check alone (pure): a line or block repeated in a row is found wherever the stream's pieces break,
and where to cut; varied text, blank lines and a line without end are not a loop."""

from __future__ import annotations

from hummingbird_agent.models.runaway import RepeatLimits, RepetitionGuard, Runaway


def feed(text: str, pieces: int = 7, limits: RepeatLimits | None = None) -> Runaway | None:
    guard = RepetitionGuard(limits)
    for start in range(0, len(text), pieces):
        found = guard.feed(text[start:start + pieces])
        if found is not None:
            return found
    return None


def test_a_line_repeated_in_a_row_is_cut_after_its_first_copy() -> None:
    head = "Summary\n\nThe job failed.\n"
    found = feed(head + "Retrying the build.\n" * 10)
    assert found == Runaway(keep_chars=len(head) + len("Retrying the build.\n"), block_lines=1, times=4)


def test_a_block_of_lines_repeated_in_a_row_is_found() -> None:
    block = "1. read the log\n2. find the error\n3. explain it\n\n"
    found = feed("Plan:\n" + block * 5, limits=RepeatLimits(min_times=3))
    assert found is not None and found.block_lines == 3 and found.times == 3
    assert ("Plan:\n" + block * 5)[:found.keep_chars] == "Plan:\n" + block.rstrip("\n") + "\n"


def test_varied_lines_and_blank_lines_are_not_a_loop() -> None:
    text = "".join(f"- job {i} failed: exit {i % 3}\n\n\n" for i in range(200)) + "\n" * 50
    assert feed(text) is None


def test_three_copies_are_not_enough_and_a_fourth_is() -> None:
    assert feed("ok\n" * 3) is None
    assert feed("ok\n" * 4) is not None


def test_a_line_without_end_is_held_in_bounded_slices() -> None:
    guard = RepetitionGuard(RepeatLimits(line_max_chars=50))
    assert guard.feed("x" * 49) is None
    found = None
    for _ in range(10):
        found = found or guard.feed("y" * 50)  # the same 50-character slice over and over, no newline
    assert found is not None and found.keep_chars == 100
