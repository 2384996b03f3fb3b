"""Podman sandbox benchmark: cold start, exec round trip, stream throughput against a raw `podman exec cat`.

Prints one JSON line. Each ratio is raw time / our time, raw and ours measured back to back in one round and
the median over rounds taken, so load from other processes hits both sides of a ratio alike. Our commands
run back to back, as a tool call's write and the read after it do: any sweep cost is inside our times.

The raw side is the same container and the same `cat`, through podman's own attached stdio, with nothing of
ours around it and nothing on this side to feed or drain it: in, podman reads the payload file itself
(`podman exec -i NAME sh -c 'cat > F' < file`); out, podman writes to /dev/null (`podman exec NAME cat F`).
Ours moves the same bytes from and to this process's memory (write_file from 64 KB chunks, read_file_iter
consumed chunk by chunk) through the sandbox API: the sweep, `timeout`, the seccomp profile and the limits
included. Raw and ours run under the same seccomp profile and limits (one container), so those cost both alike.
Ours hands the command pipes of its own (passed over the box's channel to its command server) instead of podman's
relay, so it beats that raw side; `*_ratio_vs_fd_pipe` compares it with a bare pipe on the same path (`podman exec
--preserve-fds=1`, the command reading or writing fd 3, this process feeding or draining the pipe in 64 KB reads and
writes, nothing else of ours): what our API itself costs. `exec_ratio` is a raw `podman exec true` round trip over
ours (`exec("true")`, a request on the box's channel): the goal is ours at most half of raw (ratio >= 2).
Run: .venv/bin/python bench/sandbox.py  (needs scripts/setup-host.sh done)
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The checkout this file is in, not whichever copy of the package the interpreter has installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hummingbird_agent.config.loading import SandboxConfig  # noqa: E402
from hummingbird_agent.sandbox import PodmanSandbox  # noqa: E402
from hummingbird_agent.sandbox._pipes import PIPE_SIZE_BYTES  # noqa: E402

STREAM_BYTES = 100 * 1024 * 1024
EXEC_ROUNDS = 40
START_ROUNDS = 3
STREAM_ROUNDS = 5
CHUNK = 64 * 1024


async def cold_start_s(config: SandboxConfig) -> float:
    samples = []
    for _ in range(START_ROUNDS):
        box = PodmanSandbox(config)
        t0 = time.perf_counter()
        await box.start()
        samples.append(time.perf_counter() - t0)
        await box.close()
    return statistics.median(samples)


async def exec_ms(box: PodmanSandbox) -> tuple[list[float], list[float]]:
    """Round trips of ours (`exec("true")`) and of a raw `podman exec true`, alternated."""
    ours, raw = [], []
    for _ in range(EXEC_ROUNDS):
        t0 = time.perf_counter()
        result = await box.exec("true", 10)
        ours.append((time.perf_counter() - t0) * 1000)
        assert result.ok, result
        t0 = time.perf_counter()
        subprocess.run(["podman", "exec", box.name, "true"], check=True)
        raw.append((time.perf_counter() - t0) * 1000)
    return ours, raw


def raw_in_s(name: str, payload_path: str) -> float:
    with open(payload_path, "rb") as src:
        t0 = time.perf_counter()
        subprocess.run(["podman", "exec", "-i", name, "sh", "-c", "cat > /tmp/data/raw"], stdin=src, check=True)
    return time.perf_counter() - t0


def raw_out_s(name: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(["podman", "exec", name, "cat", "/tmp/data/raw"], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def _fd_pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE_BYTES)  # the size ours uses: the baseline gets it too
    return read_end, write_end


def fd_in_s(name: str, payload: bytes) -> float:
    """A bare pipe into the command's fd 3 (podman's stdin moved there, as ours does), fed in CHUNK writes."""
    read_end, write_end = _fd_pipe()
    t0 = time.perf_counter()
    proc = subprocess.Popen(["sh", "-c", 'exec "$@" 3<&0 0</dev/null', "sh", "podman", "exec", "--preserve-fds=1",
                             name, "sh", "-c", "cat > /tmp/data/fd <&3"], stdin=read_end)
    os.close(read_end)
    view = memoryview(payload)
    for i in range(0, len(payload), CHUNK):
        os.write(write_end, view[i : i + CHUNK])
    os.close(write_end)
    assert proc.wait() == 0
    return time.perf_counter() - t0


def fd_out_s(name: str) -> float:
    """A bare pipe from the command's fd 3 (podman's stdout moved there), drained in CHUNK reads."""
    read_end, write_end = _fd_pipe()
    t0 = time.perf_counter()
    proc = subprocess.Popen(["sh", "-c", 'exec "$@" 3>&1 1>/dev/null', "sh", "podman", "exec", "--preserve-fds=1",
                             name, "sh", "-c", "cat /tmp/data/fd >&3"], stdin=subprocess.DEVNULL, stdout=write_end)
    os.close(write_end)
    total = 0
    while chunk := os.read(read_end, CHUNK):
        total += len(chunk)
    os.close(read_end)
    assert proc.wait() == 0 and total == STREAM_BYTES, total
    return time.perf_counter() - t0


async def ours_in_s(box: PodmanSandbox, payload: bytes) -> float:
    t0 = time.perf_counter()
    await box.write_file("/tmp/data/ours", (payload[i : i + CHUNK] for i in range(0, len(payload), CHUNK)))
    return time.perf_counter() - t0


async def ours_out_s(box: PodmanSandbox) -> float:
    t0 = time.perf_counter()
    total = 0
    async for chunk in box.read_file_iter("/tmp/data/ours"):
        total += len(chunk)
    assert total == STREAM_BYTES
    return time.perf_counter() - t0


async def stream_rounds(box: PodmanSandbox, payload_path: str, payload: bytes) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in ("raw_in", "fd_in", "our_in", "raw_out", "fd_out", "our_out")}
    for _ in range(STREAM_ROUNDS):
        times["raw_in"].append(raw_in_s(box.name, payload_path))
        times["fd_in"].append(fd_in_s(box.name, payload))
        times["our_in"].append(await ours_in_s(box, payload))
        times["raw_out"].append(raw_out_s(box.name))
        times["fd_out"].append(fd_out_s(box.name))
        times["our_out"].append(await ours_out_s(box))
    return times


def median_ratio(raw: list[float], ours: list[float]) -> float:
    return round(statistics.median(r / o for r, o in zip(raw, ours, strict=True)), 2)


async def main() -> dict[str, float]:
    config = SandboxConfig()
    payload = os.urandom(STREAM_BYTES)
    with tempfile.NamedTemporaryFile() as tmp:
        tmp.write(payload)
        tmp.flush()
        start = await cold_start_s(config)
        async with PodmanSandbox(config) as box:
            samples, raw_samples = await exec_ms(box)
            times = await stream_rounds(box, tmp.name, payload)
    quantiles = statistics.quantiles(samples, n=20)
    return {
        "cold_start_s": round(start, 3),
        "exec_p50_ms": round(statistics.median(samples), 1),
        "exec_p95_ms": round(quantiles[18], 1),
        "raw_exec_p50_ms": round(statistics.median(raw_samples), 1),
        "exec_ratio": round(statistics.median(raw_samples) / statistics.median(samples), 2),
        "stream_in_ratio": median_ratio(times["raw_in"], times["our_in"]),
        "stream_out_ratio": median_ratio(times["raw_out"], times["our_out"]),
        "stream_in_ratio_vs_fd_pipe": median_ratio(times["fd_in"], times["our_in"]),
        "stream_out_ratio_vs_fd_pipe": median_ratio(times["fd_out"], times["our_out"]),
        "stream_in_mb_s": round(STREAM_BYTES / statistics.median(times["our_in"]) / 1e6, 1),
        "stream_out_mb_s": round(STREAM_BYTES / statistics.median(times["our_out"]) / 1e6, 1),
        "rounds": STREAM_ROUNDS,
        "load_1m": round(os.getloadavg()[0], 2),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
