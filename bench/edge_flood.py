"""HTTP edge under a slow-connection flood; prints one JSON line.

`serve` (role all, embedded queue) runs in a child limited to RLIMIT_NOFILE 512. /healthz is probed N times
with no other traffic (baseline), then N times while a thread keeps 1,000 half-open connections (half a request
head each, the oldest replaced by a new one). Figures: probe latency p50/max in both phases, their ratio, probes
that failed (no 200 within 2 s), and the child's log lines during the flood.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = REPO / "tests" / "events" / "serve_child.py"
PROBES = 50
FLOOD = 1000
LIMITED = (
    "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512)); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def _start(tmp: Path) -> tuple[subprocess.Popen[bytes], Path, str]:
    config = tmp / "config.yaml"
    config.write_text("queues: {embedded_path: queue.sqlite, wait_time_s: 1}\nwebhook: {port: 0}\nworkflows: {}\n")
    log = tmp / "serve.log"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO), "GITLAB_WEBHOOK_SECRET": "bench"}
    with log.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", LIMITED, str(CHILD), str(config), "-", "0"],
                                stderr=err, stdout=subprocess.DEVNULL, env=env, cwd=tmp)
    deadline = time.monotonic() + 60
    while not (found := re.search(r"listening on (http://[\d.:]+)", log.read_text())):
        assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
        time.sleep(0.05)
    return proc, log, found.group(1)


def _probe(url: str) -> float | None:
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=2) as resp:  # noqa: S310 - local child
            return time.perf_counter() - start if resp.status == 200 else None
    except OSError:
        return None


def _flood(address: tuple[str, int], stop: threading.Event, opened: list[int]) -> None:
    held: list[socket.socket] = []
    while not stop.is_set():
        with contextlib.suppress(OSError):
            sock = socket.create_connection(address, timeout=0.5)
            held.append(sock)
            sock.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\nX-Gitlab-Tok")
        opened[0] += 1
        while len(held) > FLOOD:
            held.pop(0).close()
        if opened[0] >= FLOOD:
            time.sleep(0.005)
    for sock in held:
        sock.close()


def _phase(url: str) -> tuple[list[float], int]:
    times = [_probe(url) for _ in range(PROBES)]
    ok = [t for t in times if t is not None]
    return ok, PROBES - len(ok)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        proc, log, url = _start(Path(tmp))
        host, port = url.removeprefix("http://").split(":")
        idle, idle_failed = _phase(url)
        lines_before = len(log.read_text().splitlines())
        stop, opened = threading.Event(), [0]
        thread = threading.Thread(target=_flood, args=((host, int(port)), stop, opened), daemon=True)
        thread.start()
        while opened[0] < FLOOD:
            time.sleep(0.05)
        flooded, flood_failed = _phase(url)
        stop.set()
        thread.join(30)
        flood_lines = len(log.read_text().splitlines()) - lines_before
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    p50_idle, p50_flood = statistics.median(idle), statistics.median(flooded)
    print(json.dumps({
        "n_probes": PROBES, "flood_connections": FLOOD, "connections_opened": opened[0], "rlimit_nofile": 512,
        "idle_p50_ms": round(p50_idle * 1000, 2), "idle_max_ms": round(max(idle) * 1000, 2),
        "flood_p50_ms": round(p50_flood * 1000, 2), "flood_max_ms": round(max(flooded) * 1000, 2),
        "p50_ratio_flood_vs_idle": round(p50_flood / p50_idle, 2),
        "failed_probes_idle": idle_failed, "failed_probes_flood": flood_failed, "log_lines_during_flood": flood_lines,
    }))


if __name__ == "__main__":
    main()
