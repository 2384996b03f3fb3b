"""Benchmark: `bamboo populate` throughput with a zero-latency model and the embedded stores.

Prints one JSON line: populate_per_s (incidents/s, stores written) and storage_cost_ratio (time with
storage / time of the same run with dry_run), per incident: the fixed cost of opening and closing empty
stores (creating the graph schema, one checkpoint), measured in the same run, is taken out of it and
reported on its own (`store_open_close_s`, and `storage_cost_ratio_with_open` the ratio with it). The
stores' client libraries are imported before either run is timed: importing them is a once-per-process
cost, not a cost of storing.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hummingbird_agent.bamboo.learn.populate import populate  # noqa: E402
from tests.bamboo.test_commands import accumulator, incident_line, stores  # noqa: E402

STORE_LIBRARIES = ("ladybug", "qdrant_client")

INCIDENTS = 200


async def timed(tmp: Path, data: Path, dry_run: bool) -> float:
    s = None if dry_run else stores(tmp)
    start = time.perf_counter()
    await populate(accumulator(s), s, str(data), dry_run, None, out=io.StringIO(), progress=io.StringIO())
    return time.perf_counter() - start


async def open_close(tmp: Path) -> float:
    """Open and close empty stores: what a run pays once, whatever its number of incidents."""
    s = stores(tmp)
    start = time.perf_counter()
    await s.graph.open()
    await s.vectors.open()
    await s.vectors.aclose()
    await s.graph.aclose()
    return time.perf_counter() - start


async def main() -> None:
    for name in STORE_LIBRARIES:
        importlib.import_module(name)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "incidents.jsonl"
        data.write_text("\n".join(incident_line(n) for n in range(INCIDENTS)) + "\n")
        dry = await timed(Path(tmp), data, True)
        fixed = await open_close(Path(tmp) / "empty")
        wet = await timed(Path(tmp), data, False)
    print(json.dumps({"populate_per_s": round(INCIDENTS / wet, 1),
                      "storage_cost_ratio": round((wet - fixed) / dry, 2),
                      "storage_cost_ratio_with_open": round(wet / dry, 2), "store_open_close_s": round(fixed, 2),
                      "dry_run_per_s": round(INCIDENTS / dry, 1), "incidents": INCIDENTS}))


if __name__ == "__main__":
    asyncio.run(main())
