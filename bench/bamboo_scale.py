"""Knowledge base at scale: synthetic incidents shaped like the development data, on the embedded stores.

Each learned incident of a LogChunks-layout folder is extracted once (the same stand-in model as
bench/bamboo_retrieval.py); synthetic incidents are copies of those graphs drawn with the data's own
frequencies, their cause and symptoms renamed into variants drawn from a Zipf law, so the clue
vocabulary and the number of causes keep growing with the knowledge base as real ones do. They are
written through `store_knowledge` (the accumulator's store path) in batches: `store_per_s` times that
write alone (no extraction, no review, no reading of the existing causes). At each size, `populate_per_s` then
times `bamboo populate` itself on POPULATED real learned incidents (extraction and review by the stand-in model,
the existing causes read for each batch, the store write), and the real held-out logs are diagnosed through the
navigator's public `gather` (whatever ranking it runs), `--rounds` times each, in rounds that alternate a quiet
machine with one where the bench runs a CPU-bound child process (a spinner on one core) beside the diagnoses:
`diagnose_*` are the quiet figures, `loaded_diagnose_*` those with the spinner, and
`diagnose_growth_10k_to_100k` the loaded p50 at 100k over the loaded p50 at 10k (`quiet_diagnose_growth...` the
quiet one). The populated incidents stay in the store (under 1% of the next size).

    python bench/bamboo_scale.py DATA_DIR [--sizes 1000,10000,100000] [--queries 40] [--rounds 2] [--populated 100]

Prints progress to stderr and one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import io
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bamboo_naming import NamingModel  # noqa: E402
from bench.bamboo_retrieval import folds_of, incident, read_examples, read_log  # noqa: E402
from hummingbird_agent.bamboo.diagnose.navigator import ReasoningNavigator  # noqa: E402
from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder  # noqa: E402
from hummingbird_agent.bamboo.incident_graph import Edge, KnowledgeGraph, NodeType  # noqa: E402
from hummingbird_agent.bamboo.json_llm import JsonLLM  # noqa: E402
from hummingbird_agent.bamboo.learn.accumulator import (  # noqa: E402
    ExtractedKnowledge,
    KnowledgeAccumulator,
    Stores,
    key_insights,
    store_knowledge,
)
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor  # noqa: E402
from hummingbird_agent.bamboo.learn.populate import populate  # noqa: E402
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer  # noqa: E402
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore  # noqa: E402
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession  # noqa: E402
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore  # noqa: E402
from hummingbird_agent.bamboo.strategies.base import StrategyDeps, default_registry  # noqa: E402

BATCH = 200  # incidents per store write
DIMENSIONS = 384  # as the retrieval benchmark
RENAMED = (NodeType.CAUSE, NodeType.SYMPTOM)


class TemplateModel:
    """bench/bamboo_retrieval.py's stand-in (naming) model under the model interface's keyword options."""

    def __init__(self) -> None:
        self._naming = NamingModel()

    async def complete(self, system: str, user: str, **_options: object) -> str:
        return self._naming.answer(system, user)


def variant(rng: random.Random, size: int) -> int:
    """Zipf-like variant number in [0, size // 10]: a few common, a long tail of rare ones."""
    return min(int(rng.paretovariate(1.2)) - 1, max(size // 10, 1))


def synthetic(template: KnowledgeGraph, gid: str, rng: random.Random, size: int) -> ExtractedKnowledge:
    """`template` with its cause and symptoms renamed into variants (variant 0 keeps the real name)."""
    names = {}
    for node in template.nodes:
        if node.type in RENAMED:
            k = variant(rng, size)
            names[node.key] = node.name if k == 0 else f"{node.name} (variant {k})"
    nodes = tuple(replace(n, name=names.get(n.key, n.name)).with_id() for n in template.nodes)

    def key(k: tuple[NodeType, str]) -> tuple[NodeType, str]:
        return (k[0], names.get(k, k[1]))

    graph = KnowledgeGraph(nodes, tuple(Edge(key(e.source), e.type, key(e.target), e.confidence, e.props)
                                        for e in template.edges))
    summary = "; ".join(n.name for n in graph.of_type(NodeType.CAUSE))
    return ExtractedKnowledge(gid, graph, summary, tuple(key_insights(graph)), ())


class Timed:
    """A store whose awaited calls add their time to `spent` (ms): where a diagnosis spends it."""

    def __init__(self, inner: Any, spent: list[float]) -> None:
        self._inner, self._spent = inner, spent

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await attr(*args, **kwargs)
            finally:
                self._spent[-1] += (time.perf_counter() - start) * 1000

        return call


def disk_mb(root: Path) -> float:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def learner(stores: Stores | None) -> KnowledgeAccumulator:
    llm = JsonLLM(TemplateModel())
    extractor = KnowledgeGraphExtractor(default_registry().create("gitlab_ci", StrategyDeps(llm)))
    return KnowledgeAccumulator(extractor, KnowledgeReviewer(llm), llm, stores)


async def templates(root: Path) -> tuple[list[KnowledgeGraph], list[dict[str, Any]], list[dict[str, Any]]]:
    """(the learned incidents' graphs, the learned rows, the held-out rows) of fold 0."""
    learn, test = folds_of(read_examples(root), 5)[0]
    accumulator = learner(None)
    graphs = [(await accumulator.process(incident(row, None), dry_run=True)).knowledge.graph for row in learn]
    return [g for g in graphs if g.of_type(NodeType.CAUSE)], learn, test


def populate_file(path: Path, rows: list[dict[str, Any]], prefix: str) -> Path:
    """A `bamboo populate` JSONL of learned rows as the retrieval benchmark learns them (ids under `prefix`)."""
    lines = []
    for row in rows:
        learned = incident(row, None)
        lines.append(json.dumps({"id": f"{prefix}:{row['log_id']}", "email_text": learned.email_text,
                                 "task_data": learned.task_data, "task_logs": learned.task_logs}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def populated_per_s(stores: Stores, path: Path, count: int) -> float:
    """Incidents per second of `bamboo populate` into the open stores (extraction, review, reads, writes)."""
    start = time.perf_counter()
    await populate(learner(stores), None, str(path), False, None, out=io.StringIO(), progress=io.StringIO())
    return count / (time.perf_counter() - start)


async def diagnose_ms(navigator: ReasoningNavigator, queries: list[Any], spent: dict[str, list[float]]) -> list[float]:
    times = []
    for query in queries:
        for part in spent.values():
            part.append(0.0)
        start = time.perf_counter()
        await navigator.gather(query)
        times.append((time.perf_counter() - start) * 1000)
    return times


def spinner() -> subprocess.Popen[bytes]:
    """A CPU-bound child process spinning on one core until stopped (or orphaned, so a killed bench leaves
    nothing spinning): the load of a job running beside."""
    spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass"
    return subprocess.Popen([sys.executable, "-c", spin])


async def diagnoses(navigator: ReasoningNavigator, queries: list[Any], rounds: int, spent: dict[str, list[float]]
                    ) -> dict[str, dict[str, list[float]]]:
    """{"": quiet, "loaded_": with the spinner} -> {"total" and each part of `spent`: ms per diagnosis}, rounds
    alternating quiet and loaded (the spinner started and stopped around each loaded round)."""
    out: dict[str, dict[str, list[float]]] = {"": {}, "loaded_": {}}
    await diagnose_ms(navigator, queries[:1], spent)  # warm: the first diagnosis after a write reads cold pages
    for _ in range(rounds):
        for condition in out:
            child = spinner() if condition else None
            try:
                times = await diagnose_ms(navigator, queries, spent)
            finally:
                if child is not None:
                    child.kill()
                    child.wait()
            out[condition].setdefault("total", []).extend(times)
            for part, values in spent.items():
                out[condition].setdefault(part, []).extend(values[-len(times):])
    return out


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def record(out: dict[str, dict[str, float]], label: str, measured: dict[str, dict[str, list[float]]]) -> str:
    """Per condition the p50/p95 and the graph and vector parts' p50 into `out`; a progress line."""
    line = []
    for condition, values in measured.items():
        times = values["total"]
        figures = {"p50_ms": statistics.median(times), "p95_ms": p95(times),
                   **{f"{part}_p50_ms": statistics.median(v) for part, v in values.items() if part != "total"}}
        for name, value in figures.items():
            out.setdefault(f"{condition}diagnose_{name}", {})[label] = round(value, 1)
        line.append(f"{condition or 'quiet_'}p50 {figures['p50_ms']:.1f} ms (graph {figures['graph_p50_ms']:.1f}, "
                    f"vectors {figures['vectors_p50_ms']:.1f}) p95 {figures['p95_ms']:.1f} ms (n={len(times)})")
    return ", ".join(line)


def growth(p50: dict[str, float]) -> float | None:
    return round(p50["100000"] / p50["10000"], 2) if "100000" in p50 and "10000" in p50 else None


async def run(root: Path, sizes: list[int], queries: int, rounds: int, populated: int) -> dict[str, object]:
    graphs, learn, test = await templates(root)
    rng = random.Random(20)
    test = rng.sample(test, min(queries, len(test)))
    asked = [incident(row, read_log(root, str(row["build_log"]))) for row in test]
    load_before = os.getloadavg()
    out: dict[str, dict[str, float]] = {"store_per_s": {}, "populate_per_s": {}, "disk_mb": {}}
    with tempfile.TemporaryDirectory() as tmp:
        stores = Stores(CypherGraphStore(LadybugSession(str(Path(tmp) / "graph"))),
                        QdrantVectorStore("scale", DIMENSIONS, path=str(Path(tmp) / "qdrant")),
                        HashingEmbedder(DIMENSIONS))
        llm = JsonLLM(TemplateModel())
        spent: dict[str, list[float]] = {"graph": [], "vectors": []}
        timed = Stores(Timed(stores.graph, spent["graph"]), Timed(stores.vectors, spent["vectors"]), stores.embedder)
        navigator = ReasoningNavigator(KnowledgeGraphExtractor(default_registry().create(
            "gitlab_ci", StrategyDeps(llm))), llm, timed)
        await stores.graph.open()
        await stores.vectors.open()
        try:
            stored = 0
            for size in sizes:
                start = time.perf_counter()
                for first in range(stored, size, BATCH):
                    batch = [synthetic(rng.choice(graphs), f"syn:{n}", rng, size)
                             for n in range(first, min(first + BATCH, size))]
                    await store_knowledge(stores, batch)
                store_s, previous, stored = time.perf_counter() - start, stored, size
                label = str(size)
                sample = rng.sample(learn, min(populated, len(learn)))
                out["populate_per_s"][label] = round(await populated_per_s(
                    stores, populate_file(Path(tmp) / f"populate{size}.jsonl", sample, f"pop{size}"), len(sample)), 1)
                out.setdefault("load_avg_1m", {})[label] = round(os.getloadavg()[0], 2)  # other work on the machine
                progress = record(out, label, await diagnoses(navigator, asked, rounds, spent))
                out["store_per_s"][label] = round((size - previous) / store_s, 1)
                out["disk_mb"][label] = round(disk_mb(Path(tmp)), 1)
                print(f"{size} incidents: {out['store_per_s'][label]}/s stored, {out['populate_per_s'][label]}/s "
                      f"populated, diagnosis {progress}, {out['disk_mb'][label]} MB, rss {peak_rss_mb():.0f} MB",
                      file=sys.stderr)
        finally:
            await stores.vectors.aclose()
            await stores.graph.aclose()
    largest = str(sizes[-1])
    return {**out, "diagnose_growth_10k_to_100k": growth(out["loaded_diagnose_p50_ms"]),
            "quiet_diagnose_growth_10k_to_100k": growth(out["diagnose_p50_ms"]),
            "disk_mb_per_1k_incidents": round(out["disk_mb"][largest] / (sizes[-1] / 1000), 2),
            "peak_rss_mb": round(peak_rss_mb(), 1), "queries": len(test), "rounds": rounds,
            "diagnoses_per_condition": len(test) * rounds, "templates": len(graphs),
            "populated": min(populated, len(learn)), "cpus": os.cpu_count(),
            "load_avg_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="a LogChunks-layout folder")
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated, increasing")
    parser.add_argument("--queries", type=int, default=40, help="held-out logs diagnosed at each size")
    parser.add_argument("--rounds", type=int, default=2, help="passes over them, quiet and with the spinner each")
    parser.add_argument("--populated", type=int, default=100, help="real incidents run through populate at each size")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not args.data.is_dir() or not sizes or sizes[0] <= 0 or args.rounds <= 0:
        print("usage: python bench/bamboo_scale.py DATA_DIR [--sizes 1000,10000]", file=sys.stderr)
        return 2
    print(json.dumps(asyncio.run(run(args.data, sizes, args.queries, args.rounds, args.populated))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
