"""Webhook bodies from real GitLab payload samples -> handler facts; malformed bodies -> one-line errors."""

from __future__ import annotations

import pytest

from hummingbird_agent.errors import PermanentError
from hummingbird_agent.events.webhook import HANDLED_EVENT_TYPES
from hummingbird_agent.runner.handlers import GITLAB_HANDLERS
from hummingbird_agent.runner.webhooks import parse_merge_request, parse_note, parse_pipeline
from tests.servers import samples


def test_pipeline_event_from_docs_sample() -> None:
    event = parse_pipeline(samples.load("gitlab/webhooks_docs/pipeline_event.json"))
    assert event.source == "merge_request_event" and event.status == "success"
    assert event.mr is not None and event.mr.iid == 1 and event.mr.project == "gitlab-org/gitlab-test"
    assert event.mr.sha == event.sha == "bcbb5ec396a2c0f828686f14fac9b80b780504f2"


def test_draft_merge_request_from_captured_sample() -> None:
    event = parse_merge_request(samples.load("gitlab/webhooks_captured/penny_merge_request_hook_open_draft.json"))
    assert event.action == "open" and event.draft is True
    assert event.mr.iid == 37 and event.mr.sha == "3bbb3f969ff70cf13214e273b263ae113ee1b26c"


def test_note_events_from_samples() -> None:
    docs = parse_note(samples.load("gitlab/webhooks_docs/note_event_merge_request.json"))
    assert docs.action == "create" and docs.body == "This MR needs work." and docs.mr is not None
    diff = parse_note(samples.load("gitlab/webhooks_captured/penny_note_hook_diffnote_mr.json"))
    assert diff.discussion_id == "6ac63f7579b3b6d29be92f93c522e003a111226a" and diff.note_type == "DiffNote"


@pytest.mark.parametrize("body", [None, [], {"object_attributes": {}}, {"object_attributes": {"id": "x"}}])
def test_malformed_bodies_raise_one_line(body: object) -> None:
    for parse in (parse_pipeline, parse_merge_request, parse_note):
        with pytest.raises(PermanentError) as info:
            parse(body)
        assert "\n" not in str(info.value) and "malformed" in str(info.value)


def test_the_webhook_queues_exactly_the_event_kinds_the_runner_handles() -> None:
    # A kind queued but not handled would be acknowledged to GitLab and then dropped without a word; a
    # kind handled but not queued would never arrive.
    assert set(HANDLED_EVENT_TYPES) == set(GITLAB_HANDLERS)
