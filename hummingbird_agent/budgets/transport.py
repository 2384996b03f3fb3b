"""Limits of the event transport: webhook edge, queues, router and worker (re-exported by
`hummingbird_agent.budgets`)."""

# --- event transport ---------------------------------------------------------------------------
# SQS and S3 calls (botocore): connect timeout, seconds (a reachable endpoint answers in well under 1 s);
# read timeout, seconds, above the 20 s long poll (LONG_POLL_WAIT_S) so a receive is never cut short;
# attempts per call including the first (botocore "standard" mode: jittered backoff, at most 20 s).
AWS_CONNECT_TIMEOUT_S = 5
AWS_READ_TIMEOUT_S = 40
AWS_MAX_ATTEMPTS = 4
# SQS hard limit for ReceiveMessage / SendMessageBatch / DeleteMessageBatch entries; the embedded
# queue uses the same so both backends batch alike.
QUEUE_BATCH_MAX = 10
# Long-poll wait of one receive. 20 s is the SQS maximum: fewest empty receives. Shutdown does not
# wait for it (the poll is cancelled), so it does not add to SHUTDOWN_GRACE_S.
LONG_POLL_WAIT_S = 20
# Visibility timeout of a received work message. The heartbeat renews it every HEARTBEAT_INTERVAL_S,
# so it only bounds how long a crashed worker's message stays hidden; must exceed 2x the interval.
VISIBILITY_TIMEOUT_S = 300
# Heartbeat period for in-flight messages (peers research: every 60 s extend by about 3x that).
HEARTBEAT_INTERVAL_S = 60.0
# SQS refuses to keep a message hidden longer than 12 h after receipt; a handler is cancelled
# (and its message left for redelivery) before that ceiling.
MAX_HANDLER_RUNTIME_S = 11 * 3600
# Receives of one message before it is dead-lettered (embedded queue; on SQS the queue's
# RedrivePolicy.maxReceiveCount, peers research: 3-5 for the FIFO).
MAX_RECEIVES = 5
# FIFO deduplication window: a MessageDeduplicationId seen in the last 5 min is accepted but not
# delivered, even after the first message was deleted (SQS semantics).
DEDUP_WINDOW_S = 300
# Webhook-level deduplication of Idempotency-Key / X-Gitlab-Event-UUID: GitLab retries a failed
# delivery within minutes, a manual "Resend" may come hours later. Bounded by WEBHOOK_DEDUP_MAX_KEYS.
WEBHOOK_DEDUP_WINDOW_S = 24 * 3600
WEBHOOK_DEDUP_MAX_KEYS = 100_000
# Largest webhook body accepted. GitLab MR/pipeline bodies are tens of KB; gzip+base64 makes 1 MiB of
# JSON small enough for the SNS/SQS 256 KiB-1 MiB message limits in practice.
WEBHOOK_MAX_BODY_BYTES = 1024 * 1024
# Largest queue message the service sends itself (SQS's default MaximumMessageSize, 256 KiB): a status-note update
# whose excerpts would not fit is sent without them (runner/status_note.py).
QUEUE_MESSAGE_MAX_BYTES = 256 * 1024
# Largest decompressed event body (gzip bomb guard); far above WEBHOOK_MAX_BODY_BYTES.
ENVELOPE_MAX_DECODED_BYTES = 16 * 1024 * 1024
# Deepest JSON nesting of a webhook body. GitLab bodies nest about 5 levels (changes.labels.previous.*);
# a deeper body is refused with 400 before it is parsed, so parsing never meets Python's recursion limit.
WEBHOOK_MAX_JSON_DEPTH = 64
# HTTP edge (webhook, /healthz, /readyz). A client must send a complete request head within this time of
# connecting (or of its previous response, for keep-alive); slow-header clients are closed.
WEBHOOK_HEADER_TIMEOUT_S = 10.0
# An authenticated webhook's body must arrive within this time (1 MiB takes well under a second); else 408.
WEBHOOK_BODY_TIMEOUT_S = 30.0
# Open connections of the HTTP edge. At the cap a new connection evicts the oldest one that is not inside a
# request handler (slow clients go first), else it is closed at once. Never more than half the process's
# file-handle limit (RLIMIT_NOFILE), so queue, sessions, sandboxes and API clients keep theirs.
WEBHOOK_MAX_CONNECTIONS = 512
# Listen backlog: connections the kernel queues before we accept them (the queued-accepts cap).
WEBHOOK_LISTEN_BACKLOG = 128
# At most one log line per this interval for repeated edge trouble (accept failures such as running out of
# file handles, evicted connections); the line carries the count since the previous one.
EDGE_ERROR_LOG_INTERVAL_S = 60.0
# On SIGTERM: how long in-flight handlers may finish (the deployment's terminationGracePeriod, 900 s).
SHUTDOWN_GRACE_S = 900.0
# Embedded queue: how often an idle long poll re-reads SQLite for messages sent by another process
# (sends in the same process wake it at once).
EMBEDDED_POLL_INTERVAL_S = 0.05
# Embedded queue: how long a SQLite write waits for another process's lock.
EMBEDDED_BUSY_TIMEOUT_S = 5.0
# Router/worker pause after a failed queue call, so an outage does not become a hot loop.
TRANSPORT_ERROR_BACKOFF_S = 1.0
# `queue peek` / `queue redrive` on SQS: how long received messages stay hidden while the tool looks
# at them (released at once afterwards); long enough that one run sees each message once.
ADMIN_HOLD_S = 120
# `queue peek`: messages shown when --max is not given.
ADMIN_PEEK_DEFAULT = 10
# After SHUTDOWN_GRACE_S: how long cancelled handlers get to unwind before their messages are released
# anyway (a handler blocked in a thread cannot be interrupted). Small against the grace.
CANCEL_WAIT_S = 2.0
# After the event loop ended: how long blocking calls still running in threads (SDK retries) may take
# before the process exits without them; the messages they served were already released. Together
# with CANCEL_WAIT_S this is the few seconds shutdown may overrun SHUTDOWN_GRACE_S.
EXIT_THREAD_JOIN_S = 3.0
