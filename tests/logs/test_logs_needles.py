"""The vectorised literal search finds exactly the lines a `bytes.lower().find` per literal finds."""

from __future__ import annotations

import random

from hummingbird_agent.logs.cues import CUE_LITERALS, cached_cue_score, cue_score
from hummingbird_agent.logs.needles import LiteralLines
from hummingbird_agent.logs.steps import BOUNDARY_LITERALS


def lines_by_find(block: bytes, literals: tuple[bytes, ...]) -> list[int]:
    lower = block.lower()
    lines = lower.split(b"\n")
    return [i for i, line in enumerate(lines) if any(lit.lower() in line for lit in literals if lit)]


def test_matches_find_on_mixed_case_unicode_and_block_edges() -> None:
    literals = CUE_LITERALS + BOUNDARY_LITERALS + (b"x", b"Zz", b"", "é".encode())
    block = "\n".join([
        "ERR at start", "no cue here", "FaTaL: x marks", "✗ broken", "ends with $ ", "$", "caf\u00e9",
        "ERROR", "e", "rr", "exit", "EXIT 1", "segmentatio", "not  ok", "NOT OK", "zZ", "fail",
    ]).encode()
    assert LiteralLines(literals).find(block)[0].tolist() == lines_by_find(block, literals)


def test_matches_find_on_random_blocks() -> None:
    rng = random.Random(5)
    alphabet = b"eErRxXfFaAiIlL$ \n\xe2\x9c\x97tTo"
    literals = CUE_LITERALS + BOUNDARY_LITERALS
    finder = LiteralLines(literals)
    for size in (0, 1, 2, 3, 17, 4096):
        block = bytes(rng.choice(alphabet) for _ in range(size))
        assert finder.find(block)[0].tolist() == lines_by_find(block, literals), block


def test_cached_score_equals_the_score_of_each_line_whatever_its_numbers() -> None:
    lines = [
        "Tests run: 10, Failures: 0, Errors: 0", "Tests run: 12, Failures: 01, Errors: 0",
        "Tests run: 12, Failures: 10, Errors: 0", "exit code 0", "exit code 05", "exit code 50",
        "see error.log1", "see error.12345", "see error.1234", "see error.00001", "✗12", "✗1",
        "2024-05-01T12:00:00.000001Z 3 failed", "2024-05-01T12:00:00.000001Z 0 failed",
        "00 errors", "0 errors", "100 errors", "make[2]: *** [all] Error 2",
    ]
    cache: dict[str, float] = {}
    for line in lines * 2:
        assert cached_cue_score(cache, line) == cue_score(line), line


def test_matches_find_for_random_literals_at_every_offset() -> None:
    # Literals of 1 to 6 bytes over a small alphabet occur at even and odd offsets, overlapping, at block
    # edges; the anchors chosen on the first block must find them in every later block too.
    rng = random.Random(7)
    alphabet = b"aAbB$ \n\xe2\x9c"
    for _ in range(30):
        literals = tuple(bytes(rng.choice(alphabet[:-3] + alphabet[-2:]) for _ in range(rng.randint(1, 6)))
                         for _ in range(rng.randint(1, 5)))
        finder = LiteralLines(literals)
        for size in (64, 7, 0, 2, 3, 513):
            block = bytes(rng.choice(alphabet) for _ in range(size))
            assert finder.find(block)[0].tolist() == lines_by_find(block, literals), (literals, block)
