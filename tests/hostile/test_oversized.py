"""Oversized input: an answer over GitLab's note limit is cut visibly, the footer and the marker kept, never
refused by GitLab (unit and end to end); a status-note update whose excerpts exceed a queue message goes without
them, never refused by the queue."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.events import EmbeddedStore, decode_sns_message
from hummingbird_agent.events.worker import QueueContinuations
from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.markers import parse_markers
from hummingbird_agent.runner.status_note import EVIDENCE_LEFT_OUT, StatusTarget, StatusUpdate, submit
from hummingbird_agent.triage.status_note import StatusEntry
from tests.gitlab.test_note_text import MARKER
from tests.runner.harness import expect_turns, pipeline_event
from tests.runner.test_service_edges import fakes, running
from tests.servers.gemini import function_call_turn, text_turn

__all__ = ["fakes"]  # the fixture the end-to-end case runs on


def test_oversized_result_is_truncated_visibly_and_keeps_marker() -> None:
    body = note_text.result_body("x" * (budgets.NOTE_MAX_CHARS + 5000), MARKER, reply_prompt=True)
    assert len(body) <= budgets.NOTE_MAX_CHARS
    assert "[truncated" in body
    assert parse_markers(body) == [MARKER]


@pytest.mark.podman
@pytest.mark.timeout(240)
async def test_oversized_result_is_truncated_not_rejected(tmp_path: Path, fakes: Any) -> None:
    async with running(tmp_path, fakes) as service:
        # A huge run: many tool calls and an answer over the note limit. The details go first, the answer is
        # cut last, the footer and the marker stay whole.
        expect_turns(service.model, function_call_turn("sandbox_exec", {"command": "echo 1"}),
                     text_turn("## Analysis\n" + "x" * (budgets.NOTE_MAX_CHARS + 10_000)))
        service.publish(pipeline_event())
        await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis", timeout_s=90)
        body = service.final_notes()[0]["body"]
        assert "[truncated" in body and len(body) <= budgets.NOTE_MAX_CHARS
        assert "1 more tool calls not shown" in body and "`sandbox_exec`" not in body
        assert "2/6 iterations" in body and "`/hummingbird help`</sub>" in body
        assert service.markers()[0].wf == "analyze-failures"


async def test_a_status_update_too_large_for_a_queue_message_goes_without_its_excerpts(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "queue.sqlite")
    store.open()
    try:
        work = store.queue("work", fifo=True)
        excerpts = os.urandom(budgets.QUEUE_MESSAGE_MAX_BYTES).hex()  # incompressible
        entry = StatusEntry("a" * 40, 9, "failed", "**Triage:** 1 failed check", excerpts)
        await submit(QueueContinuations(work, "parent"), StatusUpdate(StatusTarget(1, 7, "u"), entry))
        [message] = await work.receive(10, 0, 30)
        assert len(message.body.encode()) <= budgets.QUEUE_MESSAGE_MAX_BYTES
        sent = StatusUpdate.from_json(decode_sns_message(message.body).body)
        assert sent.entry == StatusEntry("a" * 40, 9, "failed", entry.summary, EVIDENCE_LEFT_OUT)
        assert message.group_id == "status-note:1:7"
    finally:
        store.close()
