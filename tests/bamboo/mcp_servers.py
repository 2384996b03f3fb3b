"""Starts the test MCP server over streamable HTTP on 127.0.0.1 (ephemeral port) in a child process."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

SERVER = Path(__file__).with_name("mcp_server.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpMcpServer:
    """`with HttpMcpServer(env) as s:` gives `s.url`; the child is stopped by its pid on exit."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._env = env
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> HttpMcpServer:
        self._proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(self.port)], env=self._env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.__exit__()
        raise RuntimeError("test MCP server did not start")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
