"""An accepted webhook is stored or refused: the queue store is removed, made read-only, corrupted or emptied while
`serve` runs; /readyz and /webhook answer 503, one ERROR line names the store and the cause, and
nothing answered 2xx is missing from the queue afterwards. Restoring the store recovers without restart."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import ClientSession

from hummingbird_agent.config.loading import load_config
from hummingbird_agent.events import EmbeddedStore, decode_sns_message, log_only_handler, run_service
from tests.events.support import SqsSetup, http_of_service

SECRET = "durability-secret"
ENV = {"GITLAB_WEBHOOK_SECRET": SECRET}


@contextlib.asynccontextmanager
async def ingress_service(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, role: str = "ingress", waiting: str | None = None, **queues: Any
) -> AsyncIterator[ClientSession]:
    """`serve --role ingress` in-process (webhook -> ingress queue, nothing consumes it), or another role."""
    doc = {"queues": {"embedded_path": "queue.sqlite", **queues}, "webhook": {"port": 0}, "workflows": {}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(doc))
    loaded = load_config(tmp_path / "config.yaml", ENV)
    stop = asyncio.Event()
    task = asyncio.create_task(run_service(loaded, role, log_only_handler, stop, worker_waiting=waiting))
    async with http_of_service(task, stop, lambda: caplog.text) as http:
        yield http


async def post(http: ClientSession, n: int) -> int:
    headers = {"X-Gitlab-Token": SECRET, "Content-Type": "application/json"}
    async with http.post("/webhook", data=json.dumps({"object_kind": "pipeline", "n": n}), headers=headers) as r:
        return r.status


async def readyz(http: ClientSession) -> tuple[int, str]:
    async with http.get("/readyz") as r:
        return r.status, str((await r.json()).get("reason", ""))


def stored(db: Path) -> list[int]:
    store = EmbeddedStore(db)
    store.open(create=False)
    try:
        with store.transaction() as conn:
            bodies = [r[0] for r in conn.execute("SELECT body FROM messages WHERE queue = 'ingress' ORDER BY seq")]
    finally:
        store.close()
    return sorted(decode_sns_message(b).body["n"] for b in bodies)


def _backup(db: Path) -> Path:
    copy = db.with_name("backup.sqlite")
    src, dst = sqlite3.connect(db), sqlite3.connect(copy)
    with dst:
        src.backup(dst)
    src.close()
    dst.close()
    return copy


def _moved_away(db: Path) -> Callable[[], None]:
    db.rename(db.with_name("elsewhere.sqlite"))
    return lambda: db.with_name("elsewhere.sqlite").rename(db)


def _deleted(db: Path) -> Callable[[], None]:
    copy = _backup(db)
    db.unlink()
    return lambda: copy.rename(db)


def _read_only(db: Path) -> Callable[[], None]:
    db.chmod(0o444)
    return lambda: db.chmod(0o644)


def _corrupt(db: Path) -> Callable[[], None]:
    good = db.read_bytes()
    db.write_bytes(b"this is no database" + good[19:])
    return lambda: db.write_bytes(good)


def _truncated(db: Path) -> Callable[[], None]:
    good = db.read_bytes()
    db.write_bytes(b"")
    return lambda: db.write_bytes(good)


def _replaced_by_empty(db: Path) -> Callable[[], None]:
    copy = _backup(db)
    db.unlink()
    db.touch()
    return lambda: copy.rename(db)


BREAKS = {
    "moved away": (_moved_away, "missing"),
    "deleted": (_deleted, "missing"),
    "read-only": (_read_only, "read-only"),
    "corrupt": (_corrupt, "corrupt"),
    "truncated to 0 bytes": (_truncated, "empty"),
    "replaced by an empty file": (_replaced_by_empty, "empty"),
}


@pytest.mark.parametrize("how", list(BREAKS))
async def test_broken_store_refuses_webhooks_and_recovers_without_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    caplog.set_level(logging.INFO)
    db = tmp_path / "queue.sqlite"
    acknowledged: list[int] = []
    async with ingress_service(tmp_path, caplog) as http:
        for n in range(3):
            assert await post(http, n) == 202
            acknowledged.append(n)
        breaker, cause = BREAKS[how]
        restore = breaker(db)
        for n in range(3, 8):
            status = await post(http, n)
            assert status == 503, f"webhook {n} answered {status} with the store {how}"
        status, reason = await readyz(http)
        assert status == 503 and str(db) in reason and cause in reason
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1, [r.getMessage() for r in errors]
        assert str(db) in errors[0].getMessage() and cause in errors[0].getMessage()
        restore()
        assert (await readyz(http))[0] == 200
        for n in range(8, 10):
            assert await post(http, n) == 202
            acknowledged.append(n)
        assert "queue usable again" in caplog.text
    assert stored(db) == acknowledged


async def test_sqs_send_failure_refuses_webhooks_and_logs_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, sqs: SqsSetup
) -> None:
    caplog.set_level(logging.INFO)
    url = sqs.create("hooks", fifo=False)
    settings = {"backend": "sqs", "ingress_url": url, "endpoint_url": sqs.aws.endpoint}
    async with ingress_service(tmp_path, caplog, **settings) as http:
        assert await post(http, 0) == 202
        sqs.boto.delete_queue(QueueUrl=url)
        assert [await post(http, n) for n in (1, 2, 3)] == [503, 503, 503]
        status, reason = await readyz(http)
        assert status == 503 and "hooks" in reason
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1 and f"SendMessageBatch on {sqs.name('hooks')}" in errors[0], errors
        assert sqs.create("hooks", fifo=False) == url
        assert await post(http, 4) == 202
        assert (await readyz(http))[0] == 200
    bodies = sqs.boto.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    assert [decode_sns_message(m["Body"]).body["n"] for m in bodies] == [4]


async def test_a_worker_only_process_waiting_for_secrets_is_unready(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with ingress_service(tmp_path, caplog, role="worker", waiting="HB_BOT_TOKEN not set") as http:
        assert await readyz(http) == (503, "HB_BOT_TOKEN not set")
    assert "worker started" not in caplog.text
