"""The examples the pages show are what the code prints: the example note (the service's triage and note
rendering against the fake GitLab with a scripted model) and the output of each tested command of the getting-
started page, run as written. `python -m tests.docs.regenerate` rewrites them when they differ."""

from __future__ import annotations

import pytest

from tests.docs import blocks, commands, example_note
from tests.docs.blocks import REGENERATE


def test_the_example_note_is_the_one_the_service_renders() -> None:
    note = example_note.render_note()
    for page in example_note.PAGES:
        shown = blocks.block(page.read_text(encoding="utf-8"), example_note.NAME)
        expected = example_note.shown(page, note)
        assert shown == expected, f"{page.name}: the example note differs from the rendered one; run: {REGENERATE}"


def test_the_note_shows_the_verdicts_before_the_explanation_and_no_run_dependent_values() -> None:
    note = example_note.render_note()
    assert note.startswith("**Triage:** 2 failed checks")
    assert note.index("🔴 new") < note.index("### Pipeline failure analysis")
    assert "127.0.0.1" not in note and "00000000-0000-0000-0000-000000000000" in note


BLOCKS = [b for page in commands.PAGES for b in blocks.tested_blocks(page.read_text(encoding="utf-8"))]


def test_the_pages_have_their_tested_commands() -> None:
    written = "".join(b.commands for b in BLOCKS)
    for command in ("--help", "check-config", "excerpt", "bamboo analyze", "tests.docs.demo", "run analyze-failures"):
        assert command in written, command


@pytest.mark.parametrize("tested", BLOCKS, ids=[b.commands.strip().splitlines()[0] for b in BLOCKS])
def test_each_tested_command_prints_what_the_page_shows(tested: blocks.Tested) -> None:
    assert commands.run(tested.commands) == tested.output, f"run: {REGENERATE}"
