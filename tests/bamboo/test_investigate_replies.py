"""What a human says in an investigation, parsed; the session state round-trips through JSON."""

from __future__ import annotations

import json

import pytest

from hummingbird_agent.bamboo.investigate.replies import parse
from hummingbird_agent.bamboo.investigate.state import Finalize, InvestigationState, Proposal, Run
from hummingbird_agent.errors import PermanentError


@pytest.mark.parametrize(("text", "word"), [("approve", "approve"), ("  Approve. ", "approve"), ("reject", "reject"),
                                            ("confirm", "confirm"), ("abandon", "abandon"),
                                            ("approve the restart please", "question"),
                                            ("what did the runner log say?", "question")])
def test_single_words_are_answers_and_anything_else_a_question(text: str, word: str) -> None:
    assert parse(text).word == word


def test_finalize_takes_a_cause_and_an_optional_resolution() -> None:
    said = parse("finalize cause: runner disk full resolution: prune images")
    assert said.finalize == Finalize("runner disk full", "prune images")
    assert parse("Finalise cause: runner disk full").finalize == Finalize("runner disk full", "")
    assert parse("finalize").word == "finalize" and parse("finalize").finalize is None


def test_a_fenced_block_is_corrected_code() -> None:
    said = parse("Use this instead:\n```python\nreturn {'x': await tools.get_job(job_id=1)}\n```\n")
    assert said.word == "code" and said.text == "return {'x': await tools.get_job(job_id=1)}"


def test_state_round_trips_and_a_foreign_session_is_refused() -> None:
    state = InvestigationState("s", "why?", {"runner": "r1"}, 3, "open",
                               Proposal("code", ("a", "b"), ("b",), "why?", True),
                               (Run("why?", "code", ("a",), True, True, "{}"),), ({"investigation": "x"},),
                               (("human", "why?"),), Finalize("c", "r"), ("n",))
    assert InvestigationState.from_json(json.loads(json.dumps(state.to_json()))) == state
    with pytest.raises(PermanentError, match="not an investigation"):
        InvestigationState.from_json({"contents": []})
