"""A moto server (SQS, SNS, S3, ...) in a child process on an ephemeral 127.0.0.1 port, with a
per-test reset and boto3 client helpers."""

from __future__ import annotations

import select
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any, Protocol

import boto3

# Credentials and region the fixture exports for boto3/aiobotocore; moto accepts anything.
AWS_TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}
# The child imports moto (about 0.3 s); allow for a slow, busy machine.
STARTUP_TIMEOUT_S = 30.0


class AwsServer(Protocol):
    """What the AWS tests need of a backend (MotoServer, LocalStackServer): where it listens and clients."""

    endpoint: str
    region: str

    def client(self, service: str, **kwargs: Any) -> Any: ...


class MotoServer:
    """`start()` spawns the server; `reset()` drops all AWS state; `client(name)` builds a boto3 client."""

    def __init__(self, region: str = "us-east-1") -> None:
        self.region = region
        self._proc: subprocess.Popen[bytes] | None = None
        self.endpoint = ""
        self._stderr: Any = None

    def start(self) -> MotoServer:
        # A process, not a thread: moto in the test process shares the GIL and runs ~25 % slower.
        # -P: the script's folder must not shadow packages (this folder has a moto.py and a gitlab.py).
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [sys.executable, "-P", str(Path(__file__).with_name("moto_main.py"))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
        )
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], STARTUP_TIMEOUT_S)
        line = self._proc.stdout.readline().strip() if ready else b""
        if not line.isdigit():
            tail = self._stderr_tail()
            self.stop()
            raise RuntimeError(f"moto server failed to start: {tail}")
        self.endpoint = f"http://127.0.0.1:{int(line)}"
        return self

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.stdin is not None:
            self._proc.stdin.close()  # the child exits on EOF
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._stderr.close()
        self._proc = None

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    def reset(self) -> None:
        """Forget every queue, topic and bucket (moto's own reset API)."""
        req = urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST", data=b"")
        with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - fixed local URL
            resp.read()

    def client(self, service: str, **kwargs: Any) -> Any:
        """A boto3 client for `service` pointed at this server; close it when done."""
        return boto3.client(
            service, endpoint_url=self.endpoint, region_name=self.region,
            aws_access_key_id="testing", aws_secret_access_key="testing", **kwargs,
        )
