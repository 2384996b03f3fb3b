"""SQS adapter on aiobotocore: the only module that imports it. Maps SDK errors to our typed errors.

The endpoint comes from config (AWS_ENDPOINT_URL overrides it there), so real AWS and a moto server both work.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from hummingbird_agent.aws import AwsClient, map_aws_errors
from hummingbird_agent.events.envelope import fifo_problem
from hummingbird_agent.events.protocols import BatchResult, OutgoingMessage, ReceivedMessage

# Error codes no retry can fix: a missing queue is left to TransientError since it may be created
# (or a moto server restarted) while we run.
_PERMANENT_CODES = frozenset({"InvalidParameterValue", "MissingParameter", "InvalidAttributeName"})


def map_sqs_errors(queue: str, action: str) -> contextlib.AbstractContextManager[None]:
    """Translate botocore exceptions into TransientError / PermanentError / ConfigError."""
    return map_aws_errors(f"SQS {action} on {queue}", _PERMANENT_CODES)


class SqsClient(AwsClient):
    """One aiobotocore SQS client, opened in start() and closed in aclose()."""

    def __init__(self, region: str, endpoint_url: str | None) -> None:
        super().__init__("sqs", region, endpoint_url)

    def queue(self, url: str) -> SqsQueue:
        return SqsQueue(self, url)


@contextlib.asynccontextmanager
async def sqs_client(region: str, endpoint_url: str | None) -> AsyncIterator[SqsClient]:
    client = SqsClient(region, endpoint_url)
    await client.start()
    try:
        yield client
    finally:
        await client.aclose()


class SqsQueue:
    """One SQS queue (standard or FIFO) behind the Queue protocol."""

    def __init__(self, client: SqsClient, url: str) -> None:
        self._client = client
        self.url = url
        self.name = url.rsplit("/", 1)[-1]
        self.fifo = self.name.endswith(".fifo")

    async def receive(self, max_messages: int, wait_s: float, visibility_timeout_s: int) -> list[ReceivedMessage]:
        with map_sqs_errors(self.name, "ReceiveMessage"):
            reply = await self._client.client.receive_message(
                QueueUrl=self.url,
                MaxNumberOfMessages=max_messages,
                WaitTimeSeconds=int(wait_s),
                VisibilityTimeout=visibility_timeout_s,
                MessageSystemAttributeNames=["ApproximateReceiveCount", "MessageGroupId", "SequenceNumber"],
            )
        return [_received(m) for m in reply.get("Messages", [])]

    async def send_batch(self, messages: Sequence[OutgoingMessage]) -> BatchResult:
        # Refuse invalid FIFO entries here: SQS would, and a moto server does not.
        refused = {i: p for i, m in enumerate(messages) if self.fifo and (p := fifo_problem(m.group_id, m.dedup_id))}
        entries = [self._entry(i, m) for i, m in enumerate(messages) if i not in refused]
        reply: dict[str, Any] = {}
        if entries:
            with map_sqs_errors(self.name, "SendMessageBatch"):
                reply = await self._client.client.send_message_batch(QueueUrl=self.url, Entries=entries)
        ids = {int(s["Id"]): s["MessageId"] for s in reply.get("Successful", [])}
        failed = tuple(sorted(_failures(reply) + tuple(refused.items())))
        return BatchResult(tuple(sorted(ids)), failed, ids)

    def _entry(self, index: int, message: OutgoingMessage) -> dict[str, Any]:
        entry: dict[str, Any] = {"Id": str(index), "MessageBody": message.body}
        if self.fifo:
            entry["MessageGroupId"] = message.group_id
            entry["MessageDeduplicationId"] = message.dedup_id
        return entry

    async def delete_batch(self, receipts: Sequence[str]) -> BatchResult:
        entries = [{"Id": str(i), "ReceiptHandle": r} for i, r in enumerate(receipts)]
        with map_sqs_errors(self.name, "DeleteMessageBatch"):
            reply = await self._client.client.delete_message_batch(QueueUrl=self.url, Entries=entries)
        return BatchResult(tuple(sorted(int(s["Id"]) for s in reply.get("Successful", []))), _failures(reply))

    async def change_visibility_batch(self, receipts: Sequence[str], timeout_s: int) -> BatchResult:
        entries = [{"Id": str(i), "ReceiptHandle": r, "VisibilityTimeout": timeout_s} for i, r in enumerate(receipts)]
        with map_sqs_errors(self.name, "ChangeMessageVisibilityBatch"):
            reply = await self._client.client.change_message_visibility_batch(QueueUrl=self.url, Entries=entries)
        return BatchResult(tuple(sorted(int(s["Id"]) for s in reply.get("Successful", []))), _failures(reply))

    async def ping(self) -> None:
        await self.attributes(["QueueArn"])

    # --- operator tools (events.sqs_admin) ---------------------------------------------------------
    async def attributes(self, names: Sequence[str]) -> dict[str, str]:
        with map_sqs_errors(self.name, "GetQueueAttributes"):
            reply = await self._client.client.get_queue_attributes(QueueUrl=self.url, AttributeNames=list(names))
        return dict(reply.get("Attributes", {}))

    async def purge(self) -> None:
        with map_sqs_errors(self.name, "PurgeQueue"):
            await self._client.client.purge_queue(QueueUrl=self.url)

    async def url_of(self, name: str) -> str:
        """URL of another queue in the same account and region, by name."""
        with map_sqs_errors(name, "GetQueueUrl"):
            reply = await self._client.client.get_queue_url(QueueName=name)
        return str(reply["QueueUrl"])

    async def depth(self) -> dict[str, int]:
        """Approximate visible / in-flight counts, and the dead-letter queue's depth when a redrive policy names
        one (for metrics)."""
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "RedrivePolicy"]
        with map_sqs_errors(self.name, "GetQueueAttributes"):
            attrs = (await self._client.client.get_queue_attributes(QueueUrl=self.url, AttributeNames=names))
        attrs = attrs.get("Attributes", {})
        counts = {"visible": int(attrs.get("ApproximateNumberOfMessages", 0)),
                  "in_flight": int(attrs.get("ApproximateNumberOfMessagesNotVisible", 0))}
        target = json.loads(attrs.get("RedrivePolicy") or "{}").get("deadLetterTargetArn", "")
        if target:
            with map_sqs_errors(self.name, "GetQueueAttributes (dead-letter queue)"):
                url = (await self._client.client.get_queue_url(QueueName=target.rsplit(":", 1)[-1]))["QueueUrl"]
                dlq = await self._client.client.get_queue_attributes(
                    QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
            counts["dead_lettered"] = int(dlq.get("Attributes", {}).get("ApproximateNumberOfMessages", 0))
        return counts


def _received(message: dict[str, Any]) -> ReceivedMessage:
    attrs = message.get("Attributes", {})
    return ReceivedMessage(
        message_id=message["MessageId"],
        receipt=message["ReceiptHandle"],
        body=message.get("Body", ""),
        group_id=attrs.get("MessageGroupId"),
        receive_count=int(attrs.get("ApproximateReceiveCount", "1")),
        sequence=attrs.get("SequenceNumber"),
    )


def _failures(reply: dict[str, Any]) -> tuple[tuple[int, str], ...]:
    return tuple((int(f["Id"]), f"{f.get('Code', 'Error')}: {f.get('Message', '')}") for f in reply.get("Failed", []))
