"""The LocalStack test server itself: it listens on 127.0.0.1 only and ends when the process that started it
dies, even by kill -9 (no teardown runs then)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.servers.localstack import ROOT, installed

# Starts a LocalStackServer, prints LocalStack's pid, then waits to be killed.
_PARENT = """
import sys, time
from pathlib import Path
from tests.servers.localstack import LocalStackServer
server = LocalStackServer(Path(sys.argv[1])).start()
print(server._proc.pid, flush=True)
time.sleep(600)
"""


def _listening(pid: int) -> set[str]:
    """Local addresses (hex ip:port, as /proc/net/tcp* writes them) of the sockets `pid` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                out.add(fields[1])
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; only its parent (gone here) would reap it.
    return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"


def test_localstack_listens_on_loopback_only_and_dies_with_its_parent(tmp_path: Path) -> None:
    if not installed():
        if os.environ.get("CI"):
            pytest.fail("LocalStack is not installed: run `make localstack`")
        pytest.skip("LocalStack is not installed: run `make localstack` (scripts/setup-localstack.sh)")
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        addresses = _listening(pid)
        assert addresses and all(a.startswith("0100007F:") for a in addresses), addresses  # 127.0.0.1
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 60
    while _alive(pid):
        assert time.monotonic() < deadline, "LocalStack outlived its parent"
        time.sleep(0.2)
