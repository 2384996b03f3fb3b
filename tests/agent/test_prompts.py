"""System-prompt layering, warning precedence and the shipped prompt texts."""

from __future__ import annotations

import hashlib
from importlib import resources

import jinja2
import pytest

from hummingbird_agent.agent import Budget, SystemPrompt, WarningKind, choose_warning, render_prompt

# Snapshot of the shipped prompt files. An intended edit updates the digest here (sha256, first 16 hex):
#   for f in hummingbird_agent/prompts/*.md; do echo "$(basename $f .md) $(sha256sum $f | cut -c1-16)"; done
PROMPT_DIGESTS = {
    "base_system": "3f13959a721d4ed5",
    "context_warning": "5d8d365bbafa7acf",
    "continuation": "9c7a40659745ad73",
    "empty_response_nudge": "0fad6703e81d9512",
    "final_turn_warning": "5f4a4f43ce0c773c",
    "iteration_warning": "abae9ef32f1de3f2",
    "no_data_nudge": "0b96722a37b1472f",
    "unavailable_sources": "ad385b08b55ed96e",
}
BUDGET = Budget(max_iterations=10, context_limit_tokens=1000, max_empty_nudges=2)


def test_prompt_files_match_their_snapshot() -> None:
    folder = resources.files("hummingbird_agent").joinpath("prompts")
    found = {
        p.name.removesuffix(".md"): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        for p in folder.iterdir()
        if p.name.endswith(".md")
    }
    assert found == PROMPT_DIGESTS


@pytest.mark.parametrize(
    ("iteration", "prompt_tokens", "last_empty", "expected"),
    [
        (1, 0, False, None),
        (7, 799, False, None),
        (8, 0, False, WarningKind.ITERATION),  # 80 % of 10 iterations
        (3, 800, False, WarningKind.CONTEXT),  # 80 % of 1000 tokens
        (8, 900, False, WarningKind.ITERATION),  # iteration warning wins over the context warning
        (3, 0, True, WarningKind.EMPTY_NUDGE),
        (9, 900, True, WarningKind.EMPTY_NUDGE),  # the nudge wins over soft warnings
        (10, 0, True, WarningKind.FINAL_TURN),  # last iteration
        (2, 1001, False, WarningKind.FINAL_TURN),  # context limit exceeded
    ],
)
def test_warning_precedence(iteration: int, prompt_tokens: int, last_empty: bool, expected: WarningKind | None) -> None:
    assert choose_warning(iteration, BUDGET, prompt_tokens, last_empty) is expected


def test_layers_are_in_order_and_the_warning_goes_last() -> None:
    prompt = SystemPrompt("BASE", "NOTES", "WORKFLOW\n", "CONTINUE")
    assert prompt.stable() == "BASE\n\n## Tool notes\n\nNOTES\n\nWORKFLOW\n\nCONTINUE"
    rendered = prompt.render(WarningKind.ITERATION, 8, BUDGET)
    assert rendered.startswith(prompt.stable() + "\n\n## Budget warning")
    assert "(3 model turns left, including this one)" in rendered
    assert prompt.render(None, 1, BUDGET) == prompt.stable()
    assert SystemPrompt("BASE", "", "WORKFLOW").stable() == "BASE\n\nWORKFLOW"


def test_base_prompt_names_the_workdir_and_threshold() -> None:
    from hummingbird_agent.agent.prompts import base_system_prompt

    text = base_system_prompt()
    assert "`/tmp/data`" in text and "larger than 4 KB" in text and "`/tmp/data/_out/`" in text


def test_missing_template_value_is_an_error() -> None:
    with pytest.raises(jinja2.UndefinedError):
        render_prompt("iteration_warning")
