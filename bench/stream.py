"""Konflux list streaming benchmark: peak RSS growth and MB/s for gzip PipelineRun list pages of 10 MB,
100 MB and 1 GB, for the Konflux streaming path next to json.loads and raw ijson parsing of the same bytes.

Each measurement runs in a fresh process (its own peak RSS); the fake API generates every page lazily.
Prints one JSON line. Run: .venv/bin/python bench/stream.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hummingbird_agent.data_sources import konflux  # noqa: E402
from tests.servers.k8s import KubeServer, generated_page  # noqa: E402

SIZES = {"10MB": 10 * 10**6, "100MB": 100 * 10**6, "1GB": 10**9}
MODES = ("konflux", "json_loads", "ijson")
NS, SHA = "tenant", "be7c" * 10
# A PipelineRun of ~12 KB: the Tekton sample plus a status message, typical of real runs.
PAD_BYTES = 8000


def probe(mode: str, url: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "tests.data_sources.stream_probe", mode, url, NS, SHA],
                          cwd=REPO, capture_output=True, text=True, check=True)
    return dict(json.loads(proc.stdout.splitlines()[-1]))


def measure(size: int) -> dict[str, dict[str, Any]]:
    item = len(b"".join(generated_page("pipelineruns", 1, PAD_BYTES, NS)()))
    count = size // item + 1
    with KubeServer("live", gzip=True) as server:
        selector = f"{konflux.BUILD_SHA_LABEL}={SHA}"
        server.generated[(NS, "pipelineruns", selector)] = generated_page("pipelineruns", count, PAD_BYTES, NS)
        results = {mode: probe(mode, server.url) for mode in MODES}
    for result in results.values():
        result["mb_s"] = size / 10**6 / result["seconds"]
    return results


def main() -> None:
    runs = {label: measure(size) for label, size in SIZES.items()}

    def per_size(mode: str, key: str) -> dict[str, float]:
        return {label: round(runs[label][mode][key], 1) for label in SIZES}

    ratios = {label: runs[label]["konflux"]["mb_s"] / runs[label]["ijson"]["mb_s"] for label in SIZES}
    print(json.dumps({
        "rss_growth_mb": per_size("konflux", "rss_growth_mb"),
        "json_loads_rss_growth_mb": per_size("json_loads", "rss_growth_mb"),
        "throughput_ratio_vs_ijson": round(ratios["1GB"], 2),
        "throughput_ratio_vs_ijson_by_size": {k: round(v, 2) for k, v in ratios.items()},
        "konflux_mb_s": per_size("konflux", "mb_s"),
        "ijson_mb_s": per_size("ijson", "mb_s"),
        "json_loads_mb_s": per_size("json_loads", "mb_s"),
    }))


if __name__ == "__main__":
    main()
