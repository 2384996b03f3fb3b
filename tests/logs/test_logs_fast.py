"""The fast paths give what the plain ones give: regions copied (gzip) or read again by offset (a plain file),
a score remembered by line shape, and the rewritten rules."""

from __future__ import annotations

import gzip
import random

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.logs import cues, steps
from hummingbird_agent.logs.clean import decode_clean, decode_clean_lines
from hummingbird_agent.logs.excerpt import scan
from hummingbird_agent.logs.modes import unsupervised_finder
from hummingbird_agent.logs.scan import literal_finder
from tests.logs.test_logs_scan import LITERALS, cue_or_boundary, generated_log


def kept(view) -> tuple:
    return view.total_lines, view.tail_start, view.tail, [(r.start, r.lines, r.hits) for r in view.regions]


@pytest.mark.parametrize("block_bytes", [997, 65536])
def test_copied_and_re_read_regions_are_the_same(tmp_path, monkeypatch, block_bytes) -> None:
    monkeypatch.setattr(budgets, "EXCERPT_READ_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(budgets, "EXCERPT_MAX_REGIONS", 12)
    monkeypatch.setattr(budgets, "EXCERPT_MAX_REGION_LINES", 150)
    for seed, sparse in ((1, False), (3, True)):
        data = generated_log(seed, 2500, sparse)
        plain, packed = tmp_path / f"{seed}.log", tmp_path / f"{seed}.log.gz"
        plain.write_bytes(data)
        packed.write_bytes(gzip.compress(data))
        finder = literal_finder(LITERALS, cue_or_boundary)
        reread = kept(scan(plain, finder))
        assert kept(scan(packed, literal_finder(LITERALS, cue_or_boundary))) == reread
        assert kept(scan(plain, unsupervised_finder())) == reread  # scores remembered by shape


FRAGMENTS = [
    "error", "Error", "ERROR", "ERRORS", "errors", "[E0463]", " ", ":", "\t", "FAILED", "FAIL",
    "FATAL", "Failure", "Traceback (most recent call last)", "Exception", "npm ERR!", "aborted!",
    "exited with ", "code ", "1", "0", "7", "exit ", "status", ": ", "make", "[2]", ": ***",
    "Killed", "\u2717", "\u274c", "not ok", " failed", " failures", "Failures", "Failed",
    "Could not", "0 errors", "-Werror", "-Wno-error", "--fail-fast", "error.log", "set -e",
    "|| true", "IGNORING", "if", " then", "RETRYING", "warning", "PASSED", "ok", "Ok", "skipped",
    "[ 72%]", "Unpacking", "  Get:1", ">", "deprecated", "] Compiling ", "x", "_", "-", ".", "\xe9",
    "K", "\u017f", "\u0130", "\u212a", "\u2713", "\x1b[31m", "\x1b]8;;u", "\r", "\x07",
    "section_start:12:step", "\xa0",
]


def test_rewritten_rules_match_the_readable_ones() -> None:
    rng = random.Random(11)
    for _ in range(50_000):
        line = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 7)))
        assert (cues._STRONG_FAST.search(line) is None) == (cues._STRONG.search(line) is None), line
        assert cues._benign(line) == (cues._BENIGN.search(line) is not None), line
        routine = steps._ROUTINE.search(line) is not None or steps._PROGRESS.search(line) is not None
        assert steps.is_routine(line) == routine, line
        raw = line.encode("utf-8") + b"\n" + line[::-1].encode("utf-8")
        assert decode_clean_lines(raw) == [decode_clean(part) for part in raw.split(b"\n")], raw
