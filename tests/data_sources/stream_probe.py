"""Measure one way of consuming a PipelineRun list page in a fresh process: peak RSS growth and MB/s.

Run: python -m tests.data_sources.stream_probe MODE API_URL NAMESPACE SHA
MODE: `registry` (Konflux tool through the registry into a Podman sandbox file), `konflux` (the same
streaming path, output discarded), `json_loads` (whole body, then json.loads), `ijson` (raw ijson
events over the same bytes). Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import ijson
import requests

from hummingbird_agent.config.loading import SandboxConfig
from hummingbird_agent.data_sources import konflux
from hummingbird_agent.data_sources.kube import KubeClient, KubeCredentials
from hummingbird_agent.sandbox import PodmanSandbox
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.tools.spill import Spiller

TOKEN = "kube-token"
MiB = 1024 * 1024


def _status(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} missing from /proc/self/status")


def _reset_peak() -> int:
    """Reset the peak-RSS mark (clear_refs 5) and return the current RSS in bytes."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
        handle.write("5")
    return _status("VmRSS")


def _list_url(api: str, ns: str) -> str:
    return f"{api}{konflux.PIPELINERUNS.format(ns=ns)}"


def _selector(sha: str) -> dict[str, str]:
    return {"labelSelector": f"{konflux.BUILD_SHA_LABEL}={sha}"}


def run_konflux(api: str, ns: str, sha: str) -> int:
    client = KubeClient(KubeCredentials(api, TOKEN))
    response = konflux.get_pipelineruns(client, ns, sha)
    return sum(len(chunk) for chunk in response.chunks)


def run_json_loads(api: str, ns: str, sha: str) -> int:
    resp = requests.get(_list_url(api, ns), params=_selector(sha), headers={"Authorization": f"Bearer {TOKEN}"},
                        timeout=600)
    return len(json.loads(resp.content)["items"])


def run_ijson(api: str, ns: str, sha: str) -> int:
    with requests.get(_list_url(api, ns), params=_selector(sha), headers={"Authorization": f"Bearer {TOKEN}"},
                      stream=True, timeout=600) as resp:
        resp.raw.decode_content = True
        return sum(1 for _ in ijson.parse(resp.raw, buf_size=64 * 1024))


async def run_registry(api: str, ns: str, sha: str) -> dict[str, Any]:
    config = SandboxConfig(memory_bytes=1536 * MiB, workdir_bytes=768 * MiB, pids_limit=64, cpus=1.0)
    async with PodmanSandbox(config, session_id="rssprobe") as box:
        registry = ToolRegistry(Spiller(box))
        konflux.register(registry, "https://api.example", "", credentials=KubeCredentials(api, TOKEN))
        base = _reset_peak()
        started = time.perf_counter()
        result = await registry.execute("konflux_get_pipelineruns", {"namespace": ns, "commit_sha": sha})
        elapsed = time.perf_counter() - started
        size = (await box.exec(f"stat -c %s {result.spilled_path}", 30)).stdout.decode().strip()
        return {"rss_growth_mb": (_status("VmHWM") - base) / MiB, "seconds": elapsed, "ok": result.ok,
                "included": result.metadata.get("included"), "file_bytes": int(size or 0)}


def main(argv: list[str]) -> dict[str, Any]:
    mode, api, ns, sha = argv
    if mode == "registry":
        return asyncio.run(run_registry(api, ns, sha))
    run = {"konflux": run_konflux, "json_loads": run_json_loads, "ijson": run_ijson}[mode]
    base = _reset_peak()
    started = time.perf_counter()
    count = run(api, ns, sha)
    elapsed = time.perf_counter() - started
    return {"rss_growth_mb": (_status("VmHWM") - base) / MiB, "seconds": elapsed, "count": count}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
