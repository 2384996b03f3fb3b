"""Event transport: SNS-style envelopes, queue backends (SQS, embedded SQLite), the ingress router, the
FIFO worker, the webhook ingress and `serve`. Other packages import only the names below."""

from hummingbird_agent.events.embedded import EmbeddedQueue, EmbeddedStore
from hummingbird_agent.events.envelope import Envelope, decode_sns_message, encode_envelope, group_for
from hummingbird_agent.events.protocols import (
    BatchResult,
    Continuations,
    Event,
    Handler,
    OutgoingMessage,
    Queue,
    ReceivedMessage,
)
from hummingbird_agent.events.router import router_loop
from hummingbird_agent.events.serve import log_only_handler, open_transport, run_service, serve
from hummingbird_agent.events.worker import WorkerSettings, poll_loop

__all__ = [
    "BatchResult",
    "Continuations",
    "EmbeddedQueue",
    "EmbeddedStore",
    "Envelope",
    "Event",
    "Handler",
    "OutgoingMessage",
    "Queue",
    "ReceivedMessage",
    "WorkerSettings",
    "decode_sns_message",
    "encode_envelope",
    "group_for",
    "log_only_handler",
    "open_transport",
    "poll_loop",
    "router_loop",
    "run_service",
    "serve",
]
