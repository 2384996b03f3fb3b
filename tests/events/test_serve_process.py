"""`serve` as a real process: kill -9 mid-handler and restart, SIGTERM during a run, and a clean start
with the repository's config.yaml and no environment."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from hummingbird_agent.events import EmbeddedStore, OutgoingMessage, encode_envelope

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("serve_child.py")
SECRET = "child-webhook-secret"
READY = re.compile(r"serve ready: .* listening on (http://[\d.]+:\d+)")


class Child:
    """One `serve` child process; its stderr goes to a file we poll."""

    def __init__(self, config: Path, journal: str, delay_s: float, env: dict[str, str], *extra: str,
                 argv: list[str] | None = None) -> None:
        """serve_child.py with these arguments, or `argv` (e.g. the real CLI) when given."""
        self.log = config.parent / f"child-{time.monotonic_ns()}.log"
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                argv or [sys.executable, str(CHILD), str(config), journal, str(delay_s), *extra],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
                cwd=config.parent,
            )
        self.url = self.wait_for_log(READY).group(1)

    def wait_for_log(self, pattern: re.Pattern[str], timeout_s: float = 15) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = pattern.search(self.log.read_text())
            if found:
                return found
            assert self.proc.poll() is None, f"child exited: {self.log.read_text()}"
            time.sleep(0.05)
        raise AssertionError(f"no {pattern.pattern!r} in: {self.log.read_text()}")

    def post(self, body: bytes, token: str = SECRET) -> int:
        headers = {"X-Gitlab-Token": token, "Content-Type": "application/json"}
        req = urllib.request.Request(self.url + "/webhook", data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:  # noqa: S310 - local child
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 20) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout_s)


def _env(secret: bool = True) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
    if secret:
        env["GITLAB_WEBHOOK_SECRET"] = SECRET
    return env


def _config(tmp: Path, **queues: object) -> Path:
    settings = {
        "embedded_path": "queue.sqlite",
        "visibility_timeout_s": 2,
        "heartbeat_interval_s": 0.4,
        "wait_time_s": 1,
        "shutdown_grace_s": 20,
        **queues,
    }
    doc = {"queues": settings, "webhook": {"port": 0}, "workflows": {}}
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _journal_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _wait_journal(path: Path, line: str, timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while line not in _journal_lines(path):
        assert time.monotonic() < deadline, f"{line!r} never journaled: {_journal_lines(path)}"
        time.sleep(0.05)


def _queue_counts(db: Path) -> dict[str, tuple[int, int]]:
    store = EmbeddedStore(db)
    store.open()
    try:
        return {name: store.queue(name, fifo=False).counts() for name in ("ingress", "work", "work-dlq")}
    finally:
        store.close()


async def test_kill_9_mid_handler_then_restart_redelivers_and_handles_once(tmp_path: Path) -> None:
    config, journal = _config(tmp_path), tmp_path / "journal.txt"
    store = EmbeddedStore(tmp_path / "queue.sqlite")
    store.open()
    await store.queue("ingress", fifo=False).send_batch(
        [OutgoingMessage(encode_envelope("gitlab", "pipeline", {"n": 0}))]
    )
    store.close()
    first = Child(config, str(journal), 60, _env())
    _wait_journal(journal, "start 0 1")
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    second = Child(config, str(journal), 0, _env())
    _wait_journal(journal, "done 0")
    assert second.stop() == 0
    assert _journal_lines(journal) == ["start 0 1", "start 0 2", "done 0"]
    assert _queue_counts(tmp_path / "queue.sqlite") == {"ingress": (0, 0), "work": (0, 0), "work-dlq": (0, 0)}


async def test_sigterm_lets_the_running_handler_finish_and_loses_nothing(tmp_path: Path) -> None:
    config, journal = _config(tmp_path, max_concurrent_agents=1), tmp_path / "journal.txt"
    child = Child(config, str(journal), 1.0, _env())
    assert child.post(b'{"object_kind": "pipeline", "n": 0}') == 202
    _wait_journal(journal, "start 0 1")
    assert child.post(b'{"object_kind": "pipeline", "n": 1}') == 202
    assert child.stop() == 0
    child.wait_for_log(re.compile("serve stopped"))
    assert _journal_lines(journal) == ["start 0 1", "done 0"]
    # The second event was not started; it waits in a queue for the next run.
    restarted = Child(config, str(journal), 0, _env())
    _wait_journal(journal, "done 1")
    assert restarted.stop() == 0
    assert _journal_lines(journal) == ["start 0 1", "done 0", "start 1 1", "done 1"]


async def test_sigterm_past_the_grace_cancels_releases_and_exits_though_a_thread_blocks(tmp_path: Path) -> None:
    # A long visibility timeout: only an explicit release makes the message visible again soon.
    config = _config(tmp_path, shutdown_grace_s=2, visibility_timeout_s=600, heartbeat_interval_s=60)
    journal = tmp_path / "journal.txt"
    child = Child(config, str(journal), 120, _env(), "thread")
    assert child.post(b'{"object_kind": "pipeline", "n": 0}') == 202
    _wait_journal(journal, "start 0 1")
    # Grace 2 s, then cancellation and a bounded wait for the blocked thread: well inside 15 s.
    assert child.stop(timeout_s=15) == 0
    log = child.log.read_text()
    assert "handlers cancelled after the 2 s grace period; releasing 1 messages" in log
    assert _queue_counts(tmp_path / "queue.sqlite")["work"] == (1, 0)
    restarted = Child(config, str(journal), 0, _env())
    _wait_journal(journal, "done 0")
    assert restarted.stop() == 0
    assert _journal_lines(journal) == ["start 0 1", "start 0 2", "done 0"]


async def test_a_second_sigint_cancels_the_running_handler_and_releases_its_message(tmp_path: Path) -> None:
    config = _config(tmp_path, shutdown_grace_s=600, visibility_timeout_s=600, heartbeat_interval_s=60)
    journal = tmp_path / "journal.txt"
    child = Child(config, str(journal), 120, _env())
    assert child.post(b'{"object_kind": "pipeline", "n": 0}') == 202
    _wait_journal(journal, "start 0 1")
    child.proc.send_signal(signal.SIGINT)
    child.wait_for_log(re.compile("worker draining"))
    assert child.stop(signal.SIGINT, timeout_s=15) == 0  # not the 600 s grace
    assert "1 handlers cancelled by a second signal; releasing 1 messages" in child.log.read_text()
    assert _queue_counts(tmp_path / "queue.sqlite")["work"] == (1, 0)
    assert _journal_lines(journal) == ["start 0 1"]


def test_repository_config_starts_with_no_environment_and_stops_on_sigint(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / "config.yaml").read_text())
    doc["webhook"]["port"] = 0  # the repository's 8080 may be taken on a shared machine
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(doc))
    shutil.copytree(REPO / "workflows", tmp_path / "workflows")
    child = Child(tmp_path / "config.yaml", "-", 0, _env(secret=False))
    log = child.log.read_text()
    assert "GITLAB_WEBHOOK_SECRET is not set; every webhook is refused with 401" in log
    assert child.post(b'{"object_kind": "pipeline"}', token="") == 401
    with urllib.request.urlopen(child.url + "/readyz", timeout=5) as resp:  # noqa: S310 - local child
        assert resp.status == 200
    assert child.stop(signal.SIGINT) == 0
    assert "Traceback" not in child.log.read_text()
