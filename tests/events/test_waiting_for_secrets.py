"""A worker without its secrets does not receive: events wait in the work queue with their receive counts
untouched (never dead-lettered), the webhook and router keep accepting, /readyz says why; after a restart
with the secrets set, the waiting event is handled."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from aiohttp import ClientSession

from hummingbird_agent.config.loading import load_config
from hummingbird_agent.events import EmbeddedStore
from hummingbird_agent.runner.service import serve_async
from tests.events.support import http_of_service, wait_for
from tests.servers import GitLabServer
from tests.servers.samples import load

pytestmark = [pytest.mark.podman, pytest.mark.timeout(120)]
HOOK = "waiting-hook-secret"
REPO = Path(__file__).resolve().parents[2]


@contextlib.asynccontextmanager
async def service(tmp_path: Path, gitlab: GitLabServer, env: dict[str, str],
                  caplog: pytest.LogCaptureFixture, **gitlab_extra: str) -> AsyncIterator[ClientSession]:
    queues = {"embedded_path": "queue.sqlite", "max_receives": 1, "visibility_timeout_s": 1,
              "heartbeat_interval_s": 0.3, "wait_time_s": 1}
    doc = {"gitlab": {"url": gitlab.url, "token_env": "HB_BOT_TOKEN", **gitlab_extra}, "queues": queues,
           "webhook": {"port": 0},
           # A workflow makes the model key one of the worker's secrets (no trigger: nothing runs a model).
           "workflows": {name: {"description": name, "prompt": str(REPO / "workflows" / "review-mr.md")}
                         for name in ("review", "review-docs")}}  # two workflows, one key: named once
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(doc))
    loaded = load_config(tmp_path / "config.yaml", {"GITLAB_WEBHOOK_SECRET": HOOK, **env})
    caplog.clear()
    stop = asyncio.Event()
    task = asyncio.create_task(serve_async(loaded, "all", str, stop))
    async with http_of_service(task, stop, lambda: caplog.text) as http:
        yield http


def work_rows(db: Path) -> dict[str, list[int]]:
    """Receive counts of the messages in each queue of the store."""
    store = EmbeddedStore(db)
    store.open(create=False)
    try:
        with store.transaction() as conn:
            rows = conn.execute("SELECT queue, receive_count FROM messages ORDER BY seq").fetchall()
    finally:
        store.close()
    out: dict[str, list[int]] = {}
    for queue, count in rows:
        out.setdefault(queue, []).append(count)
    return out


async def test_events_wait_for_the_secrets_without_being_received(
    tmp_path: Path, gitlab_server: GitLabServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    gitlab_server.add_project(1, "gitlab-org/gitlab-test")
    gitlab_server.add_mr(1, 1)
    db = tmp_path / "queue.sqlite"
    async with service(tmp_path, gitlab_server, {}, caplog) as http:
        headers = {"X-Gitlab-Token": HOOK, "Content-Type": "application/json"}
        body = json.dumps(load("gitlab/webhooks_docs/pipeline_event.json"))
        async with http.post("/webhook", data=body, headers=headers) as resp:
            assert resp.status == 202
        async with http.get("/readyz") as resp:
            assert resp.status == 200
            assert "HB_BOT_TOKEN" in (await resp.json())["worker"]
        await wait_for(lambda: "work" in work_rows(db), what="the router forwarding the event")
        # max_receives (1) x the visibility timeout (1 s), several times over: a worker that received
        # would have dead-lettered it by now.
        await asyncio.sleep(4)
    assert work_rows(db) == {"work": [0]}
    assert "worker not receiving: HB_BOT_TOKEN, GEMINI_API_KEY not set" in caplog.text
    async with service(tmp_path, gitlab_server, {"HB_BOT_TOKEN": "bot-token", "GEMINI_API_KEY": "k"}, caplog):
        await wait_for(lambda: "event finished" in caplog.text, 60, "the waiting event handled")
    assert work_rows(db) == {}
    assert caplog.text.count("event finished") == 1


async def test_a_named_marker_secret_is_waited_for_like_the_bot_token(
    tmp_path: Path, gitlab_server: GitLabServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Replicas signing with different keys would each disown the other's status note: no key, no worker."""
    caplog.set_level(logging.INFO)
    secrets = {"HB_BOT_TOKEN": "bot-token", "GEMINI_API_KEY": "k"}
    async with service(tmp_path, gitlab_server, secrets, caplog, marker_secret_env="HB_MARKERS") as http:
        async with http.get("/readyz") as resp:
            assert "HB_MARKERS" in (await resp.json())["worker"]
    assert "worker not receiving: HB_MARKERS not set" in caplog.text
