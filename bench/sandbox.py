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
Run: .venv/bin/python bench/sandbox.py  (needs scripts/setup-host.sh done)
"""

from __future__ import annotations

import asyncio
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
    times: dict[str, list[float]] = {"raw_in": [], "our_in": [], "raw_out": [], "our_out": []}
    for _ in range(STREAM_ROUNDS):
        times["raw_in"].append(raw_in_s(box.name, payload_path))
        times["our_in"].append(await ours_in_s(box, payload))
        times["raw_out"].append(raw_out_s(box.name))
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
        "stream_in_mb_s": round(STREAM_BYTES / statistics.median(times["our_in"]) / 1e6, 1),
        "stream_out_mb_s": round(STREAM_BYTES / statistics.median(times["our_out"]) / 1e6, 1),
        "rounds": STREAM_ROUNDS,
        "load_1m": round(os.getloadavg()[0], 2),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
