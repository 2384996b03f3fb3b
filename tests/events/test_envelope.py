"""Envelope codec: encode/decode are inverses on real webhook bodies; malformed input gives one typed
error with the reason."""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.errors import EnvelopeError
from hummingbird_agent.events import decode_sns_message, encode_envelope, group_for
from hummingbird_agent.events.envelope import notification_id
from tests.events.support import webhook_samples
from tests.servers.samples import load

SAMPLES = webhook_samples()


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize(("name", "body"), SAMPLES, ids=[n for n, _ in SAMPLES])
def test_round_trip_of_every_webhook_sample(name: str, body: dict, compress: bool) -> None:
    raw = encode_envelope("gitlab", body["object_kind"], body, compress=compress, message_id="m-1")
    envelope = decode_sns_message(raw)
    assert (envelope.source, envelope.event_type, envelope.body, envelope.message_id) == (
        "gitlab",
        body["object_kind"],
        body,
        "m-1",
    )
    assert decode_sns_message(raw.encode()).body == body
    assert ("content_encoding" in json.loads(raw)["MessageAttributes"]) is compress


def test_decodes_an_sns_notification_as_aws_delivers_it() -> None:
    notification = load("aws/sns_to_sqs_notification_raw_delivery_disabled.json")
    notification["Message"] = json.dumps({"object_kind": "pipeline", "id": 7})
    notification["MessageAttributes"] = {
        "source": {"Type": "String", "Value": "gitlab"},
        "event_type": {"Type": "String", "Value": "pipeline"},
    }
    envelope = decode_sns_message(json.dumps(notification))
    assert envelope.body == {"object_kind": "pipeline", "id": 7}
    assert envelope.message_id == "dc1e94d9-56c5-5e96-808d-cc7f68faa162"


def _gz(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode())).decode()


def _with(**changes: object) -> str:
    outer = json.loads(encode_envelope("gitlab", "note", {"a": 1}))
    for key, value in changes.items():
        if value is None:
            outer.pop(key, None)
        else:
            outer[key] = value
    return json.dumps(outer)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"\xff\xfe garbage", "envelope is not valid JSON"),
        ("[1, 2]", "envelope is not a JSON object"),
        (json.dumps(load("aws/sns_notification_with_message_attributes.json")), "MessageAttributes.source"),
        (json.dumps(load("aws/sns_to_sqs_notification_raw_delivery_disabled.json")), "MessageAttributes missing"),
        (_with(Type="SubscriptionConfirmation"), "not an SNS notification"),
        (_with(Message=None), "Message missing"),
        (_with(Message="not base64 !!"), "not valid base64"),
        (_with(Message=base64.b64encode(b"plain").decode()), "not valid gzip"),
        (_with(Message=_gz("[1]")), "Message is not a JSON object"),
        (_with(Message=_gz("{")), "Message is not valid JSON"),
        (_with(Message=_gz('{"a": 1}')[:-8]), "gzip"),
    ],
)
def test_malformed_input_raises_envelope_error_with_reason(raw: str | bytes, reason: str) -> None:
    with pytest.raises(EnvelopeError, match=reason):
        decode_sns_message(raw)


def test_unknown_content_encoding_is_rejected() -> None:
    outer = json.loads(encode_envelope("gitlab", "note", {"a": 1}, compress=False))
    outer["MessageAttributes"]["content_encoding"] = {"Type": "String", "Value": "zstd"}
    with pytest.raises(EnvelopeError, match="unknown content_encoding 'zstd'"):
        decode_sns_message(json.dumps(outer))


def test_gzip_bomb_is_refused() -> None:
    bomb = base64.b64encode(gzip.compress(b" " * (budgets.ENVELOPE_MAX_DECODED_BYTES + 10))).decode()
    with pytest.raises(EnvelopeError, match="exceeds"):
        decode_sns_message(_with(Message=bomb))


def test_group_is_the_discussion_for_notes_else_the_notification_id() -> None:
    note = load("gitlab/webhooks_captured/penny_note_hook_diffnote_mr.json")
    envelope = decode_sns_message(encode_envelope("gitlab", "note", note))
    assert group_for(envelope, "ingress-1") == note["object_attributes"]["discussion_id"]
    pipeline = decode_sns_message(
        encode_envelope("gitlab", "pipeline", load("gitlab/webhooks_docs/pipeline_event.json"))
    )
    assert group_for(pipeline, "ingress-2") == "ingress-2"
    # An older GitLab note without a discussion id is not serialised with anything else.
    old_note = decode_sns_message(
        encode_envelope("gitlab", "note", load("gitlab/webhooks_docs/note_event_merge_request.json"))
    )
    assert group_for(old_note, "ingress-3") == "ingress-3"


def test_notification_id_is_the_sns_message_id_else_a_hash_of_the_body() -> None:
    raw = encode_envelope("gitlab", "pipeline", {"object_kind": "pipeline"}, message_id="sns-1")
    assert notification_id(decode_sns_message(raw), raw) == "sns-1"
    outer = json.loads(raw)
    del outer["MessageId"]
    bare = json.dumps(outer)
    first, again = notification_id(decode_sns_message(bare), bare), notification_id(decode_sns_message(bare), bare)
    assert first == again and first.startswith("sha256:") and len(first) <= 128
