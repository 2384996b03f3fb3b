"""Scaling out: two worker processes on one SQS FIFO queue (moto) never run one message group at the same
time, handle every message once and in order, and share the work; their only shared state is S3."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from hummingbird_agent.events import encode_envelope
from tests.deploy.manifests import ROOT
from tests.servers import MotoServer

GROUPS = 8
PER_GROUP = 4
HANDLER_DELAY_S = 0.2
STARTUP_TIMEOUT_S = 60.0
DONE_TIMEOUT_S = 90.0
BUCKET = "hummingbird-sessions"


def start_worker(endpoint: str, queue_url: str, worker: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.deploy.scale_worker", endpoint, queue_url, BUCKET, worker, str(HANDLER_DELAY_S)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def wait_ready(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], STARTUP_TIMEOUT_S)
    line = proc.stdout.readline().strip() if ready else ""
    assert line == "ready", f"worker did not start: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"


@pytest.fixture
def fifo(moto_server: MotoServer) -> Iterator[tuple[Any, Any, str]]:
    sqs, s3 = moto_server.client("sqs"), moto_server.client("s3")
    url = sqs.create_queue(
        QueueName="work.fifo", Attributes={"FifoQueue": "true", "VisibilityTimeout": "30"}
    )["QueueUrl"]
    s3.create_bucket(Bucket=BUCKET)
    yield sqs, s3, url
    sqs.close()
    s3.close()


def send_all(sqs: Any, url: str) -> None:
    # Interleaved across groups, in sequence order within each group.
    entries = [
        {
            "Id": f"{g}-{seq}",
            "MessageBody": encode_envelope("gitlab", "note", {"group": f"g{g}", "seq": seq}),
            "MessageGroupId": f"g{g}",
            "MessageDeduplicationId": f"g{g}-{seq}",
        }
        for seq in range(PER_GROUP)
        for g in range(GROUPS)
    ]
    for start in range(0, len(entries), 10):
        reply = sqs.send_message_batch(QueueUrl=url, Entries=entries[start : start + 10])
        assert not reply.get("Failed"), reply


def records(s3: Any) -> list[dict[str, Any]]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="runs/")
    keys = [obj["Key"] for page in pages for obj in page.get("Contents", [])]
    return [json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()) for key in keys]


def wait_for_records(s3: Any, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + DONE_TIMEOUT_S
    while time.monotonic() < deadline:
        found = records(s3)
        if len(found) >= count:
            time.sleep(1.0)  # a duplicate delivery would show up now
            return records(s3)
        time.sleep(0.2)
    raise AssertionError(f"only {len(records(s3))} of {count} messages handled in {DONE_TIMEOUT_S} s")


def stop_workers(workers: list[subprocess.Popen[str]]) -> list[dict[str, Any]]:
    stats = []
    for proc in workers:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in workers:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err[-2000:]
        stats.append(json.loads(out.strip().splitlines()[-1]))
    return stats


@pytest.mark.timeout(300)
def test_two_workers_share_one_fifo_queue_without_overlapping_a_group(
    moto_endpoint: str, fifo: tuple[Any, Any, str]
) -> None:
    sqs, s3, url = fifo
    workers = [start_worker(moto_endpoint, url, name) for name in ("w1", "w2")]
    try:
        for proc in workers:
            wait_ready(proc)
        send_all(sqs, url)
        handled = wait_for_records(s3, GROUPS * PER_GROUP)
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
    stats = stop_workers(workers)

    # Every message handled exactly once.
    assert sorted((r["group"], r["seq"]) for r in handled) == sorted(
        (f"g{g}", seq) for g in range(GROUPS) for seq in range(PER_GROUP)
    )
    assert sum(s["handled"] for s in stats) == GROUPS * PER_GROUP
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in handled:
        by_group[record["group"]].append(record)
    for group, runs in by_group.items():
        runs.sort(key=lambda r: r["start"])
        # In order, and never two runs of one group at the same time, whichever process ran them.
        assert [r["seq"] for r in runs] == list(range(PER_GROUP)), group
        for earlier, later in zip(runs, runs[1:], strict=False):
            assert later["start"] >= earlier["end"], f"{group}: seq {later['seq']} overlapped seq {earlier['seq']}"
    # Both processes took part.
    assert {r["worker"] for r in handled} == {"w1", "w2"}
    assert all(s["handled"] > 0 for s in stats)
    attrs = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert attrs == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}
