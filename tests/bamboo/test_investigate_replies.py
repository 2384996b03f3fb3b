"""What a human says in an investigation, parsed; the session state round-trips through JSON."""

from __future__ import annotations

import json

import pytest

from hummingbird_agent.bamboo.investigate.replies import Said, parse
from hummingbird_agent.bamboo.investigate.state import Finalize, InvestigationState, Proposal, Run
from hummingbird_agent.errors import PermanentError


@pytest.mark.parametrize(("text", "word"), [("approve", "approve"), ("  Approve. ", "approve"), ("reject", "reject"),
                                            ("confirm", "confirm"), ("abandon", "abandon"),
                                            ("approve the restart please", "question"),
                                            ("what did the runner log say?", "question")])
def test_single_words_are_answers_and_anything_else_a_question(text: str, word: str) -> None:
    assert parse(text).word == word


@pytest.mark.parametrize("text", ["approve a1b2c3d4", "Approve `A1B2C3D4`", "approve a1b2c3d4."])
def test_an_approval_may_name_a_proposal_id(text: str) -> None:
    assert parse(text) == Said("approve", "a1b2c3d4")


@pytest.mark.parametrize("text", ["reject a1b2c3d4e5f60718", "Reject `A1B2C3D4E5F60718`", "reject a1b2c3d4e5f60718."])
def test_a_reject_may_name_a_proposal_id(text: str) -> None:
    assert parse(text) == Said("reject", "a1b2c3d4e5f60718")


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
                               Proposal("code", ("a", "b"), ("b",), "why?", True, 2, 42),
                               (Run("why?", "code", ("a",), True, True, "{}"),), ({"investigation": "x"},),
                               (("human", "why?"),), Finalize("c", "r"), ("n",))
    assert InvestigationState.from_json(json.loads(json.dumps(state.to_json()))) == state
    with pytest.raises(PermanentError, match="not an investigation"):
        InvestigationState.from_json({"contents": []})


def test_a_session_saved_before_proposal_ids_loads_and_its_proposal_gets_one() -> None:
    saved = {"kind": "investigation", "session_id": "s", "question": "why?", "task": {}, "turns": 2,
             "pending": {"code": "return 1", "tools": [], "modifies": [], "prompt": "why?", "started": False}}
    pending = InvestigationState.from_json(saved).pending
    assert pending is not None and pending.author is None and len(pending.id) == 16
    assert pending.id != Proposal("return 1", (), (), "why?", turn=3).id  # proposed again: a new id
