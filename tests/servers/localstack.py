"""LocalStack (its own SQS, SNS and S3, not moto's) in a child process on 127.0.0.1, the second AWS
backend of the transport and session-store tests.

LocalStack has no reset API (its state endpoints are in the paid edition), so tests isolate
themselves by fresh queue, topic and bucket names, never by clearing the server.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import boto3

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv-localstack" / "bin" / "python"
SERVICES = ("sqs", "sns", "s3")
# LocalStack imports its plugins and services on start: ~10 s idle, much longer on a busy 2-core machine.
STARTUP_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 20.0


def installed() -> bool:
    """True when scripts/setup-localstack.sh has built the LocalStack venv."""
    return VENV_PYTHON.exists()


class LocalStackServer:
    """`start()` spawns LocalStack (host mode, Hypercorn gateway on 127.0.0.1) and waits for its
    services; `client(name)` builds a boto3 client."""

    def __init__(self, root: Path, region: str = "us-east-1") -> None:
        self.root = root  # LocalStack's files (state, S3 objects); the caller removes it
        self.region = region
        self.endpoint = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def start(self) -> LocalStackServer:
        port = _free_port()
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [str(VENV_PYTHON), "-P", str(Path(__file__).with_name("localstack_main.py"))],
            stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT,
            env=_environment(port, self.root), cwd=self.root,
        )
        self.endpoint = f"http://127.0.0.1:{port}"
        try:
            self._wait_ready()
        except RuntimeError:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise RuntimeError(f"LocalStack exited with {self._proc.returncode}: {self.log_tail()}")
            if self._services_running():
                return
            time.sleep(0.2)
        raise RuntimeError(f"LocalStack not ready within {STARTUP_TIMEOUT_S:.0f} s: {self.log_tail()}")

    def _services_running(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.endpoint}/_localstack/health", timeout=5) as resp:  # noqa: S310
                services = json.load(resp).get("services", {})
        except (OSError, ValueError):
            return False
        return all(services.get(name) == "running" for name in SERVICES)

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.stdin is not None:
            self._proc.stdin.close()  # the child shuts LocalStack down on EOF
        try:
            self._proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None
        self._log.close()

    def log_tail(self, lines: int = 5) -> str:
        self._log.seek(0)
        text = self._log.read().decode(errors="replace").strip().splitlines()
        return " | ".join(text[-lines:]) or "no output"

    def client(self, service: str, **kwargs: Any) -> Any:
        """A boto3 client for `service` pointed at this server; close it when done."""
        return boto3.client(
            service, endpoint_url=self.endpoint, region_name=self.region,
            aws_access_key_id="testing", aws_secret_access_key="testing", **kwargs,
        )


def _free_port() -> int:
    # LocalStack needs its port up front; the short race with another bind is accepted for tests.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _environment(port: int, root: Path) -> dict[str, str]:
    listen = f"127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LOCALSTACK_", "PYTHON"))}
    env.update({
        # Hypercorn honours the host of GATEWAY_LISTEN; the default (Twisted) gateway binds 0.0.0.0.
        "GATEWAY_LISTEN": listen, "GATEWAY_SERVER": "hypercorn", "LOCALSTACK_HOST": listen,
        "SERVICES": ",".join(SERVICES), "EAGER_SERVICE_LOADING": "1", "SQS_ENDPOINT_STRATEGY": "path",
        "DNS_ADDRESS": "0", "DISABLE_EVENTS": "1", "SKIP_SSL_CERT_DOWNLOAD": "1",
        "FILESYSTEM_ROOT": str(root), "TMPDIR": str(root), "TEST_S3_STORAGE_DIR": str(root / "s3"),
    })
    return env
