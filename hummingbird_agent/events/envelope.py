"""SNS-style envelope codec: decode_sns_message() for queue bodies, encode_envelope() its exact inverse.

Pure functions, no I/O. Webhooks from SNS and the agent's own continuation messages share this format.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
import string
import uuid
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.errors import EnvelopeError

GZIP_BASE64 = "gzip+base64"
_MAX_GROUP_ID_CHARS = 128  # SQS MessageGroupId limit
# SQS allows alphanumerics and punctuation in group and deduplication ids.
_ID_CHARS = frozenset(string.ascii_letters + string.digits + string.punctuation)


@dataclass(frozen=True, slots=True)
class Envelope:
    """A decoded notification: where it came from, what kind of event, and the event body."""

    source: str
    event_type: str
    body: dict[str, Any]
    message_id: str | None = None
    content_encoding: str | None = None


def decode_sns_message(raw: str | bytes) -> Envelope:
    """Decode an SNS notification body (Message as JSON text, or gzip+base64 per content_encoding).

    Raises EnvelopeError with the reason for anything malformed; never another exception.
    """
    outer = _json_object(raw, "envelope")
    if outer.get("Type") != "Notification":
        raise EnvelopeError("not an SNS notification (Type is not 'Notification')")
    attributes = outer.get("MessageAttributes")
    if not isinstance(attributes, dict):
        raise EnvelopeError("MessageAttributes missing or not an object")
    source = _attribute(attributes, "source")
    event_type = _attribute(attributes, "event_type")
    encoding = _attribute(attributes, "content_encoding") if attributes.get("content_encoding") is not None else None
    message = outer.get("Message")
    if not isinstance(message, str):
        raise EnvelopeError("Message missing or not a string")
    if encoding == GZIP_BASE64:
        text: str | bytes = _gunzip_base64(message)
    elif encoding is None:
        text = message
    else:
        raise EnvelopeError(f"unknown content_encoding {encoding[:40]!r}")
    body = _json_object(text, "Message")
    message_id = outer.get("MessageId")
    return Envelope(source, event_type, body, message_id if isinstance(message_id, str) else None, encoding)


def encode_envelope(
    source: str,
    event_type: str,
    body: dict[str, Any],
    *,
    compress: bool = True,
    message_id: str | None = None,
) -> str:
    """The SNS notification JSON that decode_sns_message() turns back into (source, event_type, body)."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    attributes = {"source": _string(source), "event_type": _string(event_type)}
    if compress:
        text = base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")
        attributes["content_encoding"] = _string(GZIP_BASE64)
    envelope = {
        "Type": "Notification",
        "MessageId": message_id or str(uuid.uuid4()),
        "Message": text,
        "Timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "MessageAttributes": attributes,
    }
    return json.dumps(envelope, separators=(",", ":"))


def valid_queue_id(value: str) -> bool:
    """True when `value` can be an SQS MessageGroupId / MessageDeduplicationId."""
    return 0 < len(value) <= _MAX_GROUP_ID_CHARS and all(c in _ID_CHARS for c in value)


def fifo_problem(group_id: str | None, dedup_id: str | None) -> str | None:
    """Why a FIFO send entry would be refused, or None (SQS rules, checked before sending)."""
    if not group_id or not valid_queue_id(group_id):
        return "MessageGroupId missing or invalid (1-128 letters, digits, punctuation)"
    if not dedup_id or not valid_queue_id(dedup_id):
        return "MessageDeduplicationId missing or invalid (1-128 letters, digits, punctuation)"
    return None


def notification_id(envelope: Envelope, raw: str | bytes) -> str:
    """What identifies one notification across its deliveries: the SNS MessageId inside the envelope (SQS
    gives every delivery a MessageId of its own), else a hash of the whole body. The router uses it as the
    FIFO deduplication id and, outside discussions, as the group."""
    if envelope.message_id and valid_queue_id(envelope.message_id):
        return envelope.message_id
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    return "sha256:" + hashlib.sha256(data).hexdigest()


def group_for(envelope: Envelope, notification: str) -> str:
    """FIFO group of a routed event: the discussion for note events (serialising replies to one
    thread), else its notification id (no serialisation; a repeat delivery joins the same group)."""
    if envelope.event_type == "note":
        attrs = envelope.body.get("object_attributes")
        discussion = attrs.get("discussion_id") if isinstance(attrs, dict) else None
        if isinstance(discussion, str) and valid_queue_id(discussion):
            return discussion
    return notification


def _string(value: str) -> dict[str, str]:
    return {"Type": "String", "Value": value}


def _attribute(attributes: dict[str, Any], name: str) -> str:
    entry = attributes.get(name)
    value = entry.get("Value") if isinstance(entry, dict) else None
    if not isinstance(value, str) or not value:
        raise EnvelopeError(f"MessageAttributes.{name} missing or not a non-empty string")
    return value


def _gunzip_base64(message: str) -> bytes:
    try:
        compressed = base64.b64decode(message, validate=True)
    except (binascii.Error, ValueError):
        raise EnvelopeError("Message is not valid base64") from None
    try:
        data = inflate(compressed, 31, budgets.ENVELOPE_MAX_DECODED_BYTES)  # gzip container
    except EnvelopeError:
        raise EnvelopeError("Message is not valid gzip") from None
    if len(data) > budgets.ENVELOPE_MAX_DECODED_BYTES:
        raise EnvelopeError(f"decompressed Message exceeds {budgets.ENVELOPE_MAX_DECODED_BYTES} bytes")
    return data


def inflate(compressed: bytes, wbits: int, limit: int) -> bytes:
    """Decompress (zlib `wbits`: 31 gzip, 15 zlib), stopping after `limit` + 1 bytes: a longer result means
    "too large" to the caller. Raises EnvelopeError for corrupt, truncated or trailing-garbage data."""
    inflater = zlib.decompressobj(wbits=wbits)
    try:
        data = inflater.decompress(compressed, limit + 1)
    except zlib.error:
        raise EnvelopeError("corrupt compressed data") from None
    if len(data) > limit:
        return data
    if not inflater.eof or inflater.unused_data:
        raise EnvelopeError("truncated compressed data or trailing bytes")
    return data


def _json_object(raw: str | bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise EnvelopeError(f"{what} is not valid JSON") from None
    if not isinstance(value, dict):
        raise EnvelopeError(f"{what} is not a JSON object")
    return value
