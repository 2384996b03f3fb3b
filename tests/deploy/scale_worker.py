"""One worker process of the scaling test: poll_loop on an SQS FIFO queue with a handler that keeps nothing
locally; each handled message becomes an S3 object with its group, sequence, worker and start/end times.

    python -m tests.deploy.scale_worker ENDPOINT QUEUE_URL BUCKET WORKER_ID HANDLER_DELAY_S

Prints "ready" once polling, a JSON line of the worker's counts on SIGTERM, and exits 0.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from typing import Any

import boto3

from hummingbird_agent.events import Event, WorkerSettings, poll_loop
from hummingbird_agent.events.protocols import Continuations
from hummingbird_agent.events.sqs import sqs_client

REGION = "us-east-1"
SLOTS = 2


class S3Recorder:
    """The handler: sleeps like a short agent run and records the run in S3 (the only shared state)."""

    def __init__(self, s3: Any, bucket: str, worker: str, delay_s: float) -> None:
        self._s3 = s3
        self._bucket = bucket
        self._worker = worker
        self._delay_s = delay_s

    async def __call__(self, event: Event, continuations: Continuations) -> None:
        start = time.time()
        await asyncio.sleep(self._delay_s)
        record = {
            "group": event.group_id,
            "seq": event.body["seq"],
            "message_id": event.message_id,
            "worker": self._worker,
            "start": start,
            "end": time.time(),
        }
        key = f"runs/{event.group_id}/{event.body['seq']:03d}-{event.message_id}.json"
        await asyncio.to_thread(self._s3.put_object, Bucket=self._bucket, Key=key, Body=json.dumps(record).encode())


async def main(endpoint: str, queue_url: str, bucket: str, worker: str, delay_s: float) -> int:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=REGION)
    settings = WorkerSettings(max_concurrent=SLOTS, visibility_timeout_s=30, heartbeat_interval_s=5, wait_s=1)
    async with sqs_client(REGION, endpoint) as client:
        queue = client.queue(queue_url)
        await queue.ping()
        print("ready", flush=True)
        stats = await poll_loop(queue, S3Recorder(s3, bucket, worker, delay_s), stop, settings)
    s3.close()
    print(json.dumps({"worker": worker, "handled": stats.handled, "failed": stats.failed}), flush=True)
    return 0


if __name__ == "__main__":
    endpoint_arg, queue_arg, bucket_arg, worker_arg, delay_arg = sys.argv[1:6]
    sys.exit(asyncio.run(main(endpoint_arg, queue_arg, bucket_arg, worker_arg, float(delay_arg))))
