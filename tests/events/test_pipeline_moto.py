"""End to end on each AWS backend (moto, LocalStack): SNS topic -> standard ingress queue -> router -> FIFO ->
worker -> handler."""

from __future__ import annotations

import json
import uuid
from typing import Any

from hummingbird_agent.events import WorkerSettings
from tests.events.support import (
    Recorder,
    SqsSetup,
    Topic,
    running_loops,
    wait_for,
    webhook_samples,
)
from tests.servers.samples import load

FAST = WorkerSettings(max_concurrent=8, visibility_timeout_s=30, heartbeat_interval_s=5, wait_s=1, shutdown_grace_s=5)


async def test_every_sample_webhook_reaches_the_handler_with_its_type_and_group(pipeline: Any) -> None:
    topic, ingress, work = pipeline
    samples = webhook_samples()
    for index, (_, body) in enumerate(samples):
        topic.publish(body, body["object_kind"], compressed=index % 2 == 0)
    recorder = Recorder()
    async with running_loops(ingress, work, recorder, FAST):
        await wait_for(lambda: len(recorder.events) >= len(samples), 20, "all samples handled")
    assert len(recorder.events) == len(samples)
    seen = {json.dumps(e.body, sort_keys=True): e for e in recorder.events}
    other_groups = []
    for name, body in samples:
        event = seen[json.dumps(body, sort_keys=True)]
        assert (event.source, event.event_type) == ("gitlab", body["object_kind"]), name
        discussion = body.get("object_attributes", {}).get("discussion_id")
        if body["object_kind"] == "note" and discussion:
            assert event.group_id == discussion, name
        else:
            other_groups.append(event.group_id)
    # Everything else is its own group: the ingress message id.
    assert len(set(other_groups)) == len(other_groups)
    assert all(uuid.UUID(g) for g in other_groups)


async def test_notes_of_one_discussion_are_serialised_while_pipelines_run_in_parallel(pipeline: Any,
                                                                                      sqs: SqsSetup) -> None:
    topic, ingress, work = pipeline
    note = load("gitlab/webhooks_captured/penny_note_hook_diffnote_mr.json")
    pipeline_body = load("gitlab/webhooks_docs/pipeline_event.json")
    for i in range(4):
        note["object_attributes"]["id"] = 1000 + i
        topic.publish(note, "note")
        # SNS delivers to the standard ingress queue in no promised order: the order is kept from the ingress on,
        # so each note is in the queue before the next is published.
        await wait_for(lambda n=2 * i + 1: sqs.depth(ingress.url) == n, 20, f"note {i} in the ingress queue")
        pipeline_body["object_attributes"]["id"] = 2000 + i
        topic.publish(pipeline_body, "pipeline")
        await wait_for(lambda n=2 * i + 2: sqs.depth(ingress.url) == n, 20, f"pipeline {i} in the ingress queue")
    recorder = Recorder(delay_s=0.25)
    async with running_loops(ingress, work, recorder, FAST):
        await wait_for(lambda: len(recorder.events) >= 8, 20, "8 events")
    discussion = note["object_attributes"]["discussion_id"]
    assert recorder.max_running[discussion] == 1
    notes = [e.body["object_attributes"]["id"] for e in recorder.events if e.event_type == "note"]
    assert notes == [1000, 1001, 1002, 1003]  # FIFO order within the discussion
    assert recorder.max_total >= 3  # pipelines overlapped with each other and with a note


async def test_failed_fifo_send_leaves_the_ingress_message_for_a_retry(sqs: SqsSetup) -> None:
    ingress_url = sqs.create("ingress", fifo=False, visibility_s=1)
    topic = Topic(sqs, ingress_url)
    missing_work_url = ingress_url.rsplit("/", 1)[0] + f"/{sqs.name('work-later')}.fifo"
    topic.publish(load("gitlab/webhooks_docs/pipeline_event.json"), "pipeline")
    recorder = Recorder()
    ingress, work = sqs.client.queue(ingress_url), sqs.client.queue(missing_work_url)
    async with running_loops(ingress, work, recorder, FAST, ingress_visibility_s=1):
        await wait_for(lambda: False if sqs.depth(ingress_url) == 0 else _received_twice(sqs, ingress_url), 60)
        assert recorder.events == []
        sqs.create("work-later", fifo=True)  # the FIFO queue appears; the retried send now succeeds
        await wait_for(lambda: len(recorder.events) == 1, 60, "the retried event")
    assert sqs.depth(ingress_url) == 0
    assert recorder.events[0].event_type == "pipeline"
    topic.close()


def _received_twice(sqs: SqsSetup, url: str) -> bool:
    reply = sqs.boto.receive_message(
        QueueUrl=url, VisibilityTimeout=0, WaitTimeSeconds=0, MessageSystemAttributeNames=["ApproximateReceiveCount"]
    )
    return any(int(m["Attributes"]["ApproximateReceiveCount"]) >= 3 for m in reply.get("Messages", []))


async def test_continuation_round_trips_through_the_fifo(pipeline: Any) -> None:
    topic, ingress, work = pipeline
    topic.publish(load("gitlab/webhooks_docs/pipeline_event.json"), "pipeline")
    recorder = Recorder(continue_to="group/project:42")
    async with running_loops(ingress, work, recorder, FAST):
        await wait_for(lambda: len(recorder.events) >= 2, 15, "phase 2")
    first, second = recorder.events
    assert (first.source, first.event_type) == ("gitlab", "pipeline")
    assert (second.source, second.event_type, second.group_id) == ("agent", "continuation", "group/project:42")
    assert second.body == {"parent": first.message_id, "kind": "pipeline"}
