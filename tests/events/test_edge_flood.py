"""`serve` under a slow-connection flood, as a real process with a lowered file-handle limit: probes and a
real delivery still get through, and running out of file handles costs one log line, not thousands."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("serve_child.py")
SECRET = "flood-webhook-secret"
NOFILE = 512
FLOOD = 1000
READY = re.compile(r"serve ready: .* listening on http://([\d.]+):(\d+)")
HALF_HEAD = b"POST /webhook HTTP/1.1\r\nHost: x\r\nX-Gitlab-Token: fl"
# Sets the child's file-handle limit, then becomes the serve child (the limit survives exec).
LIMITED = (
    "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, ({n}, {n})); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


class Served:
    """`serve` (role all, log-only handler) in a child process limited to NOFILE file handles."""

    def __init__(self, tmp: Path) -> None:
        doc = {"queues": {"embedded_path": "queue.sqlite", "wait_time_s": 1}, "webhook": {"port": 0}, "workflows": {}}
        config = tmp / "config.yaml"
        config.write_text(yaml.safe_dump(doc))
        self.log = tmp / "serve.log"
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO), "GITLAB_WEBHOOK_SECRET": SECRET}
        argv = [sys.executable, "-c", LIMITED.format(n=NOFILE), str(CHILD), str(config), "-", "0"]
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=tmp)
        found = self.wait_for(READY)
        self.address = (found.group(1), int(found.group(2)))

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, pattern: re.Pattern[str], timeout_s: float = 30) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if found := pattern.search(self.text()):
                return found
            assert self.proc.poll() is None, f"serve exited: {self.text()}"
            time.sleep(0.05)
        raise AssertionError(f"no {pattern.pattern!r} in: {self.text()}")

    def get(self, path: str, timeout_s: float) -> int:
        url = f"http://{self.address[0]}:{self.address[1]}{path}"
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 - local child
            return int(resp.status)

    def post_pipeline(self, timeout_s: float) -> int:
        url = f"http://{self.address[0]}:{self.address[1]}/webhook"
        headers = {"X-Gitlab-Token": SECRET, "Content-Type": "application/json", "Idempotency-Key": "flood-1"}
        req = urllib.request.Request(url, data=b'{"object_kind": "pipeline"}', headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 - local child
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2 * FLOOD:  # this process holds the flood's client sockets
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4 * FLOOD), hard))
    child = Served(tmp_path)
    yield child
    if child.proc.poll() is None:
        child.proc.kill()
        child.proc.wait(30)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class Flood:
    """A thread keeping FLOOD half-open connections (half a request head each), replacing the oldest."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.sockets: list[socket.socket] = []
        self.attempts = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stopped.is_set():
            self.attempts += 1
            with contextlib.suppress(OSError):  # refused or reset connections are the server's choice
                sock = socket.create_connection(self.address, timeout=0.5)
                self.sockets.append(sock)
                sock.sendall(HALF_HEAD)
            while len(self.sockets) > FLOOD:
                self.sockets.pop(0).close()
            if self.attempts >= FLOOD:
                time.sleep(0.005)  # keep the pressure on at a lower rate once the flood is built

    def __enter__(self) -> Flood:
        self.thread.start()
        deadline = time.monotonic() + 30  # reached in about a second when the server keeps accepting
        while self.attempts < FLOOD and time.monotonic() < deadline:
            time.sleep(0.05)
        return self

    def __exit__(self, *_: object) -> None:
        self.stopped.set()
        self.thread.join(30)
        for sock in self.sockets:
            sock.close()


def test_probes_and_a_delivery_get_through_1000_half_open_connections(served: Served) -> None:
    with Flood(served.address) as flood:
        for _ in range(3):
            # The bound: /healthz answers within 2 s during the flood.
            assert served.get("/healthz", timeout_s=2) == 200
        assert served.post_pipeline(timeout_s=5) == 202
        served.wait_for(re.compile(r"event \(log only\): gitlab/pipeline"))
        assert flood.attempts >= FLOOD
    assert served.stop() == 0
    text = served.text()
    assert "Traceback" not in text and "out of system resource" not in text
    assert len(text.splitlines()) < 30, text[-3000:]


def test_running_out_of_file_handles_is_one_log_line_and_recovers(served: Served) -> None:
    pid = served.proc.pid
    in_use = len(os.listdir(f"/proc/{pid}/fd"))
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (in_use, NOFILE))  # every accept() now fails with EMFILE
    waiting = []
    for _ in range(20):
        waiting.append(socket.create_connection(served.address, timeout=5))  # queued by the kernel
    served.wait_for(re.compile(r"cannot accept connections, failed accepts: \d+ since .*Too many open files"))
    time.sleep(3)  # asyncio retries accept() every second, 128 attempts at a time
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
    assert served.get("/healthz", timeout_s=10) == 200
    for sock in waiting:
        sock.close()
    assert served.stop() == 0
    text = served.text()
    assert "Traceback" not in text and "out of system resource" not in text
    # One line when it starts; the count of the rest follows at most once per interval (60 s) and at stop.
    assert len(re.findall("cannot accept connections", text)) <= 2, text[-3000:]
