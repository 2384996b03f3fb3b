"""Podman sandbox benchmark: cold start, exec round trip, stream throughput against a raw `podman exec cat`.

Prints one JSON line. The stream ratios are our throughput divided by the raw pipe's in the same run.
Run: .venv/bin/python bench/sandbox.py  (needs scripts/setup-host.sh done)
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time

from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.sandbox import PodmanSandbox

STREAM_BYTES = 100 * 1024 * 1024
EXEC_ROUNDS = 40
START_ROUNDS = 3
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


async def exec_ms(box: PodmanSandbox) -> list[float]:
    samples = []
    for _ in range(EXEC_ROUNDS):
        t0 = time.perf_counter()
        result = await box.exec("true", 10)
        samples.append((time.perf_counter() - t0) * 1000)
        assert result.ok, result
    return samples


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


async def main() -> dict[str, float]:
    config = SandboxConfig()
    payload = os.urandom(STREAM_BYTES)
    with tempfile.NamedTemporaryFile() as tmp:
        tmp.write(payload)
        tmp.flush()
        start = await cold_start_s(config)
        async with PodmanSandbox(config) as box:
            samples = await exec_ms(box)
            # Run raw and ours three times each and keep each side's best, so page-cache and CPU noise even out.
            raw_in = min(raw_in_s(box.name, tmp.name) for _ in range(3))
            our_in = min([await ours_in_s(box, payload) for _ in range(3)])
            raw_out = min(raw_out_s(box.name) for _ in range(3))
            our_out = min([await ours_out_s(box) for _ in range(3)])
    quantiles = statistics.quantiles(samples, n=20)
    return {
        "cold_start_s": round(start, 3),
        "exec_p50_ms": round(statistics.median(samples), 1),
        "exec_p95_ms": round(quantiles[18], 1),
        "stream_in_ratio": round(raw_in / our_in, 2),
        "stream_out_ratio": round(raw_out / our_out, 2),
        "stream_in_mb_s": round(STREAM_BYTES / our_in / 1e6, 1),
        "stream_out_mb_s": round(STREAM_BYTES / our_out / 1e6, 1),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
