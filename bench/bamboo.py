"""Benchmark: what storing costs `bamboo populate`, with a zero-latency model and the embedded stores.

`storage_cost_ratio`: time of a populate run that stores / time of the same run with dry_run (extraction and
review only), per incident, as the median of PAIRS (dry, stored) pairs run alternately after one untimed
warm-up run of each, so both sides run warm and drift on a shared machine falls on both (the pairs alternate
which side goes first). The fixed cost of opening and closing empty stores (graph schema, one checkpoint),
measured beside each pair, is taken out of the stored time and reported on its own (`store_open_close_s`;
`storage_cost_ratio_with_open` keeps it in). `storage_cost_ratio_cpu` is the same ratio in the process's CPU
time, which a machine loaded by other work disturbs less than the wall clock (it leaves out waits on the disk).
Prints one JSON line; the spread is the pairs' min and max.
"""

from __future__ import annotations

import asyncio
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hummingbird_agent.bamboo.json_llm import JsonLLM  # noqa: E402
from hummingbird_agent.bamboo.learn.accumulator import Stores  # noqa: E402
from hummingbird_agent.bamboo.learn.populate import populate  # noqa: E402
from tests.bamboo.test_commands import accumulator, incident_line, rule, stores  # noqa: E402

INCIDENTS = 200
PAIRS = 7  # the issue asks for at least five; seven keep the median off a single disturbed pair


class RuleModel:
    """The populate tests' scripted answers, in process: no latency, so the ratio is our code's alone."""

    async def complete(self, system: str, user: str, **_options: object) -> str:
        return rule(system, user)


Seconds = tuple[float, float]  # (wall clock, the process's CPU time)


def clock() -> Seconds:
    return time.perf_counter(), time.process_time()


def since(start: Seconds) -> Seconds:
    now = clock()
    return now[0] - start[0], now[1] - start[1]


async def timed(s: Stores | None, data: Path) -> Seconds:
    start = clock()
    await populate(accumulator(JsonLLM(RuleModel()), s), s, str(data), s is None, None, out=io.StringIO(),
                   progress=io.StringIO())
    return since(start)


async def open_close(s: Stores) -> Seconds:
    """Open and close empty stores: what a run pays once, whatever its number of incidents."""
    start = clock()
    await s.graph.open()
    await s.vectors.open()
    await s.vectors.aclose()
    await s.graph.aclose()
    return since(start)


async def pair(tmp: Path, data: Path, number: int) -> tuple[Seconds, Seconds, Seconds]:
    """(dry, stored, open and close); odd pairs run the stored side first."""
    fixed = await open_close(stores(tmp / f"empty{number}"))
    if number % 2:
        wet = await timed(stores(tmp / f"run{number}"), data)
        return await timed(None, data), wet, fixed
    dry = await timed(None, data)
    return dry, await timed(stores(tmp / f"run{number}"), data), fixed


def ratios(runs: list[tuple[Seconds, Seconds, Seconds]], side: int) -> list[float]:
    """Per pair, (stored - open and close) / dry on the wall clock (side 0) or in CPU time (side 1)."""
    return [(wet[side] - fixed[side]) / dry[side] for dry, wet, fixed in runs]


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "incidents.jsonl"
        data.write_text("\n".join(incident_line(n) for n in range(INCIDENTS)) + "\n")
        await timed(None, data)  # warm-up, untimed: imports, prompt files, first allocations
        await timed(stores(Path(tmp) / "warm"), data)
        runs = [await pair(Path(tmp), data, n) for n in range(PAIRS)]
    wall, cpu = ratios(runs, 0), ratios(runs, 1)
    print(json.dumps({"storage_cost_ratio": round(statistics.median(wall), 2),
                      "storage_cost_ratio_min": round(min(wall), 2), "storage_cost_ratio_max": round(max(wall), 2),
                      "storage_cost_ratio_cpu": round(statistics.median(cpu), 2),
                      "storage_cost_ratio_cpu_min": round(min(cpu), 2),
                      "storage_cost_ratio_cpu_max": round(max(cpu), 2),
                      "storage_cost_ratio_with_open": round(statistics.median(w[0] / d[0] for d, w, _ in runs), 2),
                      "store_open_close_s": round(statistics.median(f[0] for _, _, f in runs), 2),
                      "populate_per_s": round(INCIDENTS / statistics.median(w[0] for _, w, _ in runs), 1),
                      "dry_run_per_s": round(INCIDENTS / statistics.median(d[0] for d, _, _ in runs), 1),
                      "pairs": PAIRS, "incidents": INCIDENTS}))


if __name__ == "__main__":
    asyncio.run(main())
