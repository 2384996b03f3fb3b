"""The block scan keeps exactly what a plain line-by-line reading of the log would keep, whatever the block size."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.logs.clean import decode_clean
from hummingbird_agent.logs.cues import CUE_LITERALS, cue_score
from hummingbird_agent.logs.excerpt import scan
from hummingbird_agent.logs.modes import excerpt_lines
from hummingbird_agent.logs.scan import LineScorer, literal_finder
from hummingbird_agent.logs.steps import BOUNDARY_LITERALS, boundary_score
from hummingbird_agent.logs.stream import LogView, open_log, read_blocks

LITERALS = CUE_LITERALS + BOUNDARY_LITERALS
# Literals of one and two bytes, upper case and non-ASCII take the search's other paths.
Kept = tuple[int, list[str], dict[int, float]]  # a region: its first line, its lines' text, its cue lines
ODD_LITERALS = LITERALS + (b"#", b"Ok", "é".encode(), b"TIMEOUT")
FAILURE = [
    "\x1b[31mTraceback (most recent call last):\x1b[0m",
    '  File "/app/x.py", line 3, in run',
    "\x1b[1mValueError: bad value\x1b[0m\r",
    "FAILED tests/test_x.py::test_run - ValueError",
]


def cue_or_boundary(line: str) -> float:
    return cue_score(line) or boundary_score(line)


def any_text(line: str) -> float:
    return 1.0 if line.strip() else 0.0


def routine(rng: random.Random, n: int) -> bytes:
    kind = rng.random()
    if kind < 0.1:
        return "\r".join(f"Downloading {n} {k}%" for k in range(0, 101, 20)).encode()
    if kind < 0.15:
        return f"\x1b[0Ksection_start:{n}:step_{n}\r\x1b[0K\x1b[36;1m$ make test\x1b[0;m".encode()
    if kind < 0.2:
        return b"bad \xff\xfe byte \xe2\x9c ok # fail_safe \xc3" + b"\r"  # invalid UTF-8, CRLF
    if kind < 0.22:  # longer than the small blocks, the clip and the scored prefix; a cue past the prefix
        return ("é" * rng.randint(1000, 3000) + " error: late " * rng.randint(1, 900)).encode()
    if kind < 0.23:  # a progress bar whose last state is past the clip
        return "\r".join(f"Downloading {n} {k}% {'#' * k}" for k in range(100)).encode() + b"\rfailed"
    if kind < 0.25:
        return b""
    if kind < 0.3:
        return f"tests/test_{n}.py::case \x1b[32mPASSED\x1b[0m Ok Errors: 0 exit status {n % 3}".encode()
    return f"[INFO] compiling module_{n}.c".encode()


def generated_log(seed: int, count: int, sparse: bool) -> bytes:
    """A log with failures every few dozen lines, or (`sparse`) a few failures among plain lines."""
    rng = random.Random(seed)
    out: list[bytes] = []
    while len(out) < count:
        if rng.random() < (0.004 if sparse else 0.03):
            out.extend(line.encode() for line in FAILURE)
        elif sparse and rng.random() < 0.97:
            out.append(f"[INFO] compiling module_{len(out)}.c".encode())
        else:
            out.append(routine(rng, len(out)))
    return b"\n".join(out) + (b"\n" if seed % 2 else b"")


def block_ends(data: bytes) -> set[int]:
    """The line numbers that end a block as the scan reads the log."""
    ends, total = set(), 0
    for block in read_blocks(io.BytesIO(data), budgets.EXCERPT_READ_BLOCK_BYTES):
        total += block.count(b"\n") + 1
        ends.add(total)
    return ends


def reference_view(data: bytes, literals: tuple[bytes, ...], score: LineScorer) -> tuple[LogView, list[Kept]]:
    """The scan's result computed line by line: cue lines, regions around them, the weakest dropped, the tail.

    A region whose lines have all been read when a block ends is closed there: a cue line in the next block
    starts a new region rather than joining it.
    """
    raws = (data[:-1] if data.endswith(b"\n") else data).split(b"\n")
    ends, window, lowered = block_ends(data), budgets.EXCERPT_WINDOW_LINES, [lit.lower() for lit in literals]
    closed: list[list] = []  # [start, last line needed, hits]
    region: list | None = None
    for n, raw in enumerate(raws, 1):
        value = score(decode_clean(raw[:4096])) if any(lit in raw.lower() for lit in lowered) else 0.0
        if value > 0 and region is not None:
            capped = n - region[0] >= budgets.EXCERPT_MAX_REGION_LINES
            if capped or n - window > region[1] + 1:
                region[1] = min(region[1], n - 1) if capped else region[1]
                _close(closed, region)
                region = None
        if value > 0:
            if region is None:
                region = [max(1, n - window, closed[-1][1] + 1 if closed else 1), n, {}]
            region[1] = max(region[1], n + window)
            region[2][n] = value
        if region is not None and n in ends and region[1] <= n:
            _close(closed, region)
            region = None
    if region is not None:
        region[1] = min(region[1], len(raws))
        _close(closed, region)

    def text(n: int) -> str:
        clip = budgets.EXCERPT_MAX_LINE_CHARS
        return decode_clean(raws[n - 1][: clip * 2])[:clip]

    kept = [(start, [text(n) for n in range(start, last + 1)], hits) for start, last, hits in closed]
    tail = tuple(text(n) for n in range(max(1, len(raws) - budgets.EXCERPT_TAIL_LINES + 1), len(raws) + 1))
    return LogView(len(raws), (), len(raws) - len(tail) + 1, tail), kept


def _close(closed: list[list], region: list) -> None:
    closed.append(region)
    if len(closed) > budgets.EXCERPT_MAX_REGIONS:
        older = len(closed) - budgets.EXCERPT_MAX_REGIONS // 4
        del closed[min(range(older), key=lambda i: sum(closed[i][2].values()))]


def scanned(path: Path, literals: tuple[bytes, ...], score: LineScorer) -> tuple[LogView, list[Kept]]:
    view = scan(path, literal_finder(literals, score))
    regions = [(r.start, r.lines, r.hits) for r in view.regions]
    return LogView(view.total_lines, (), view.tail_start, view.tail), regions


@pytest.mark.parametrize("block_bytes", [997, 4096, 65536])
@pytest.mark.parametrize(("literals", "score"), [(LITERALS, cue_or_boundary), (ODD_LITERALS, any_text)])
def test_block_scan_equals_the_line_by_line_reference(tmp_path, monkeypatch, block_bytes, literals, score) -> None:
    monkeypatch.setattr(budgets, "EXCERPT_READ_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(budgets, "EXCERPT_MAX_REGIONS", 12)  # regions are dropped
    monkeypatch.setattr(budgets, "EXCERPT_MAX_REGION_LINES", 150)  # and cut
    for seed, sparse in ((1, False), (2, False), (3, True), (4, True)):
        data = generated_log(seed, 2500, sparse)
        path = tmp_path / f"{seed}.log"
        path.write_bytes(data)
        got = scanned(path, literals, score)
        reference = reference_view(data, literals, score)
        assert got[0] == reference[0]
        assert len(got[1]) == len(reference[1])
        for kept, expected in zip(got[1], reference[1], strict=True):
            assert kept == expected


def test_a_failure_across_a_block_boundary_is_kept_whole(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(budgets, "EXCERPT_READ_BLOCK_BYTES", 4096)
    filler = [f"[INFO] compiling module_{n}.c".encode() for n in range(400)]
    head = b"\n".join(filler[:100]) + b"\n"
    # Padded so that the first 4096 bytes end inside the failure's second line.
    head += b"=" * (4096 - len(head) - len(FAILURE[0].encode()) - 1 - 10) + b"\n"
    data = head + "\n".join(FAILURE).encode() + b"\n" + b"\n".join(filler[100:]) + b"\n"
    path = tmp_path / "job.log"
    path.write_bytes(data)
    with open_log(str(path)) as handle:
        first_block = next(read_blocks(handle, 4096))
    failure_lines = range(102, 102 + len(FAILURE))
    assert first_block.count(b"\n") + 1 == failure_lines[0]  # the first block ends inside the failure
    assert scanned(path, LITERALS, cue_or_boundary) == reference_view(data, LITERALS, cue_or_boundary)
    excerpt = excerpt_lines(str(path))
    assert set(failure_lines[:3]) <= {n for first, last in excerpt.ranges for n in range(first, last + 1)}
