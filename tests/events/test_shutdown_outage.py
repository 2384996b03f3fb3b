"""SIGTERM while GitLab answers 500 to everything: the real service (`python -m hummingbird_agent serve`)
cancels the handler stuck in GitLab calls after `shutdown_grace_s`, releases its message and exits;
restarted with GitLab healthy, it handles the event exactly once."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.events.test_serve_process import Child, _env, _queue_counts
from tests.servers import GitLabServer
from tests.servers.samples import load

pytestmark = [pytest.mark.podman, pytest.mark.timeout(180)]
FINISHED = re.compile(r"event finished")


def _config(tmp: Path, gitlab: GitLabServer) -> Path:
    queues = {"embedded_path": "queue.sqlite", "visibility_timeout_s": 5, "heartbeat_interval_s": 1,
              "wait_time_s": 1, "shutdown_grace_s": 5}
    doc = {"gitlab": {"url": gitlab.url, "token_env": "HB_BOT_TOKEN"}, "queues": queues,
           "webhook": {"port": 0}, "workflows": {}}
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _service(config: Path) -> Child:
    env = _env() | {"HB_BOT_TOKEN": "bot-token", "GEMINI_API_KEY": "test-key"}
    argv = [sys.executable, "-m", "hummingbird_agent", "serve", "--config", str(config)]
    return Child(config, "-", 0, env, argv=argv)


def test_sigterm_during_a_gitlab_outage_exits_within_the_grace_and_handles_the_event_once_later(
    tmp_path: Path, gitlab_server: GitLabServer
) -> None:
    gitlab_server.add_project(1, "gitlab-org/gitlab-test")
    gitlab_server.add_mr(1, 1)
    gitlab_server.fail_next(1_000_000, 500)
    config = _config(tmp_path, gitlab_server)
    child = _service(config)
    body = json.dumps(load("gitlab/webhooks_docs/pipeline_event.json")).encode()
    assert child.post(body) == 202
    deadline = time.monotonic() + 30
    while not gitlab_server.requests_to("/discussions"):
        assert time.monotonic() < deadline, child.log.read_text()
        time.sleep(0.05)
    started = time.monotonic()
    assert child.stop(timeout_s=15) == 0
    assert time.monotonic() - started < 15
    # Cancelled after the grace, or failed within it (bounded GitLab retries): either way not finished.
    assert not FINISHED.search(child.log.read_text())
    gitlab_server.clear_failures()
    restarted = _service(config)
    restarted.wait_for_log(FINISHED, timeout_s=60)
    assert restarted.stop() == 0
    assert len(FINISHED.findall(restarted.log.read_text())) == 1
    assert "receive=2" in restarted.log.read_text()  # the released message, not a new one
    assert _queue_counts(tmp_path / "queue.sqlite") == {"ingress": (0, 0), "work": (0, 0), "work-dlq": (0, 0)}
