"""Konflux list streaming benchmark: peak RSS growth and MB/s for gzip PipelineRun list pages of 10 MB,
100 MB and 1 GB, for the Konflux streaming path next to json.loads and raw ijson parsing of the same bytes.
The runs are shaped like real ones (bench/tekton_runs.py: nested specs, status conditions, results, labels and
annotations, about 12 KB a PipelineRun and 9 KB a TaskRun), not padded with one long string.

Each measurement runs in a fresh process (its own peak RSS); the fake API generates every page lazily.
Both paths share the HTTP and gzip work, which on a busy machine can dominate; `parser_ratio_vs_ijson`
isolates the page parser (PageScanner against ijson.parse events over the same in-memory bytes, 64 KB
chunks, alternating, n rounds of each parser's best of PARSER_REPEATS runs: mean and worst).
Prints one JSON line. Run: .venv/bin/python bench/stream.py
"""

from __future__ import annotations

import io
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import ijson  # noqa: E402

from bench.tekton_runs import item_bytes, page  # noqa: E402
from hummingbird_agent import budgets  # noqa: E402
from hummingbird_agent.data_sources import konflux  # noqa: E402
from hummingbird_agent.data_sources.kube_page import PageScanner  # noqa: E402
from tests.servers.k8s import KubeServer  # noqa: E402

SIZES = {"10MB": 10 * 10**6, "100MB": 100 * 10**6, "1GB": 10**9}
MODES = ("konflux", "json_loads", "ijson")
NS, SHA = "tenant", "be7c" * 10


def probe(mode: str, url: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "tests.data_sources.stream_probe", mode, url, NS, SHA],
                          cwd=REPO, capture_output=True, text=True, check=True)
    return dict(json.loads(proc.stdout.splitlines()[-1]))


def measure(size: int) -> dict[str, dict[str, Any]]:
    count = size // item_bytes("pipelineruns", NS, SHA) + 1
    with KubeServer("live", gzip=True) as server:
        selector = f"{konflux.BUILD_SHA_LABEL}={SHA}"
        server.generated[(NS, "pipelineruns", selector)] = page("pipelineruns", count, NS, SHA)
        results = {mode: probe(mode, server.url) for mode in MODES}
    for result in results.values():
        result["mb_s"] = size / 10**6 / result["seconds"]
    return results


PARSER_SIZES = {"10MB": 10 * 10**6, "100MB": 100 * 10**6}
PARSER_ROUNDS = 5
# Within a round each parser's best of a few runs: on a shared host one run can lose its CPU for a while.
PARSER_REPEATS = 3


def _scan(data: bytes) -> int:
    scanner, step, count = PageScanner(), budgets.STREAM_CHUNK_BYTES, 0
    for start in range(0, len(data), step):
        count += len(scanner.feed(data[start:start + step]))
    count += len(scanner.flush())
    scanner.finish()
    return count


def _ijson(data: bytes) -> int:
    return sum(1 for _ in ijson.parse(io.BytesIO(data), buf_size=budgets.STREAM_CHUNK_BYTES))


def _timed(parse: Callable[[bytes], int], data: bytes) -> float:
    started = time.perf_counter()
    parse(data)
    return time.perf_counter() - started


def parser_ratio(size: int, kind: str = "pipelineruns") -> dict[str, float]:
    data = b"".join(page(kind, size // item_bytes(kind, NS, SHA) + 1, NS, SHA)())
    ratios = []
    for _ in range(PARSER_ROUNDS):
        seconds = [min(_timed(parse, data) for _ in range(PARSER_REPEATS)) for parse in (_scan, _ijson)]
        ratios.append(seconds[1] / seconds[0])
    return {"mean": round(statistics.fmean(ratios), 2), "worst": round(min(ratios), 2), "n": PARSER_ROUNDS}


def main() -> None:
    parser = {label: parser_ratio(size) for label, size in PARSER_SIZES.items()}
    taskruns = parser_ratio(PARSER_SIZES["10MB"], "taskruns")
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
        "parser_ratio_vs_ijson": parser,
        "parser_ratio_vs_ijson_taskruns_10MB": taskruns,
        "item_bytes": {kind: item_bytes(kind, NS, SHA) for kind in ("pipelineruns", "taskruns")},
    }))


if __name__ == "__main__":
    main()
