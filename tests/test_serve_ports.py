"""Several roles on one host: `serve --port` gives each process its own HTTP edge (health, /metrics)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[str], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} never answered")


@pytest.mark.timeout(180)
def test_router_and_worker_share_a_host_on_their_own_ports(tmp_path: Path) -> None:
    config = {"queues": {"backend": "embedded", "embedded_path": "q.sqlite", "wait_time_s": 1},
              "webhook": {"enabled": False, "port": 8080},
              "workflows": {"analyze-failures": {"description": "d",
                                                 "prompt": str(REPO / "workflows/analyze-failures.md")}}}
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    ports = {"router": free_port(), "worker": free_port()}
    env = {k: v for k, v in os.environ.items() if k not in ("HUMMINGBIRD_GITLAB_TOKEN", "GEMINI_API_KEY")}
    procs = {role: subprocess.Popen([sys.executable, "-m", "hummingbird_agent", "serve", "--config",
                                     str(tmp_path / "config.yaml"), "--role", role, "--port", str(port)],
                                    cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
             for role, port in ports.items()}
    try:
        for role, port in ports.items():
            wait_healthy(f"http://127.0.0.1:{port}/healthz", procs[role])
            assert "hummingbird_" in requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        for proc in procs.values():
            proc.terminate()
        codes = [proc.wait(60) for proc in procs.values()]  # every process reaped before any assertion
        for proc in procs.values():
            proc.communicate()
        assert codes == [0, 0]
