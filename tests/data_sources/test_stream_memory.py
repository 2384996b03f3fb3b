"""Invariant: a 500 MB gzip PipelineRun list page streams through the Konflux tool into a sandbox file
with the process's peak RSS growing by less than 50 MB (the page is generated lazily by the fake)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hummingbird_agent.data_sources import konflux
from tests.servers.k8s import KubeServer, generated_page

REPO = Path(__file__).resolve().parents[2]
NS, SHA = "tenant", "5eed" * 10
PAGE_BYTES = 500 * 1000 * 1000
PAD_BYTES = 60_000


def item_bytes() -> int:
    """Size of one generated run: a page of one minus the list envelope."""
    return len(b"".join(generated_page("pipelineruns", 1, PAD_BYTES, NS)())) - 80


@pytest.mark.podman
@pytest.mark.timeout(120)
def test_500mb_gzip_page_streams_into_the_sandbox_with_flat_rss() -> None:
    count = PAGE_BYTES // item_bytes() + 1
    with KubeServer("live", gzip=True) as server:
        selector = f"{konflux.BUILD_SHA_LABEL}={SHA}"
        server.generated[(NS, "pipelineruns", selector)] = generated_page("pipelineruns", count, PAD_BYTES, NS)
        proc = subprocess.run(
            [sys.executable, "-m", "tests.data_sources.stream_probe", "registry", server.url, NS, SHA],
            cwd=REPO, capture_output=True, text=True, timeout=110, check=False,
        )
        assert server.requests_to("pipelineruns")[0].header("Accept-Encoding").count("gzip")
    assert proc.returncode == 0, proc.stderr[-2000:]
    probe = json.loads(proc.stdout.splitlines()[-1])
    assert probe["ok"] and probe["included"] == count
    assert probe["file_bytes"] >= PAGE_BYTES * 0.95, "the whole page must reach the sandbox file"
    assert probe["rss_growth_mb"] < 50, probe
