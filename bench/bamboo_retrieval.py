"""Retrieval quality of the knowledge base without an LLM, on a LogChunks-layout folder.

Per repository (the project), half of the labelled logs are learned (category label -> cause, labelled
chunk -> failure excerpt) and the other half diagnosed from the whole log; the ranked causes are scored
top-1/top-3 against a baseline ranking causes by plain TF-IDF cosine of the whole log to learned logs.

    python bench/bamboo_retrieval.py DATA_DIR    # prints progress, ends with one JSON line
"""

from __future__ import annotations

import asyncio
import gzip
import html
import json
import math
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from hummingbird_agent.bamboo.accumulator import KnowledgeAccumulator, Stores
from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.llm import JsonLLM
from hummingbird_agent.bamboo.navigator import ReasoningNavigator
from hummingbird_agent.bamboo.reviewer import KnowledgeReviewer
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry

_EXAMPLE = re.compile(r"<ExampleDataOfString>(.*?)</ExampleDataOfString>", re.S)
_FIELD = re.compile(r"<(InputPath|Keywords|Category|Output)>(.*?)</\1>", re.S)
_WORD = re.compile(r"[a-z][a-z0-9_]{2,}")


def read_examples(root: Path) -> list[dict[str, Any]]:
    """index.jsonl when present, else the labels/*.xml files (read leniently: some hold raw ANSI bytes)."""
    index = root / "index.jsonl"
    if index.exists():
        return [json.loads(line) for line in index.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = []
    for xml in sorted((root / "labels").glob("*/*.xml")):
        repo = xml.stem.replace("@", "/")
        for block in _EXAMPLE.findall(xml.read_text(encoding="utf-8", errors="replace")):
            fields = {k: html.unescape(v) for k, v in _FIELD.findall(block)}
            path = fields["InputPath"]
            rows.append({"repository": repo, "build_log": f"logs/{path}.gz", "log_id": Path(path).stem,
                         "category": int(fields["Category"]), "chunk": fields["Output"]})
    return rows


def read_log(root: Path, relative: str) -> str:
    path = root / relative
    raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    return raw.decode("utf-8", errors="replace").replace("\r\n", "\n")


def split(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Interleaved per repository (by log id): even positions are learned, odd ones diagnosed."""
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_repo[row["repository"]].append(row)
    learn, test = [], []
    for repo_rows in by_repo.values():
        repo_rows.sort(key=lambda r: str(r["log_id"]))
        learn += repo_rows[0::2]
        test += repo_rows[1::2]
    return learn, test


def cause_of(row: dict[str, Any]) -> str:
    return f"{row['repository']} failure category {row['category']}".lower()


class LabelModel:
    """Stands in for the LLM: names the labelled cause, approves, echoes the discussion as summary;
    a diagnosis's clue extraction gets no causes and the diagnosis call is never made here."""

    async def complete(self, system: str, user: str) -> str:
        if system.startswith("You turn one resolved incident"):
            found = re.search(r"^Cause: (.+)$", user, re.M)
            if not found:
                return "{}"
            facts = user.split("## Facts extracted by code", 1)[1].split("##", 1)[0]
            symptoms = re.findall(r"^- Symptom: (.+)$", facts, re.M)
            features = [f for f in re.findall(r"^- Task_Feature: (.+)$", facts, re.M) if f.startswith("project=")]
            cause = found.group(1)
            return json.dumps({"causes": [{"name": cause, "symptoms": symptoms, "features": features}],
                               "procedures": [{"name": "read the build log", "tools": ["get_job_log"],
                                               "cause": cause}]})
        if system.startswith("You review a knowledge graph"):
            return json.dumps({"approved": True, "confidence": 1.0})
        return user.split("## Discussion", 1)[-1].strip()


def _tf(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.lower()))


def baseline_rank(learned: list[tuple[str, Counter[str]]], query: Counter[str], df: Counter[str],
                  total: int) -> list[str]:
    """Causes by the best TF-IDF cosine of the whole log to any learned log of that cause."""
    def vec(tf: Counter[str]) -> dict[str, float]:
        v = {w: (1 + math.log(c)) * math.log((1 + total) / (1 + df[w])) for w, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {w: x / norm for w, x in v.items()}

    q = vec(query)
    best: dict[str, float] = {}
    for cause, tf in learned:
        d = vec(tf)
        score = sum(x * d.get(w, 0.0) for w, x in q.items())
        best[cause] = max(best.get(cause, 0.0), score)
    return sorted(best, key=lambda c: -best[c])


def incident(row: dict[str, Any], log: str | None) -> IncidentInput:
    task = {"project": row["repository"], "job": "build", "status": "failed"}
    if log is None:
        text = f"Cause: {cause_of(row)}\n\nFailure excerpt:\n{row['chunk']}"
        return IncidentInput(text, task, task_logs={"build": row["chunk"]}, incident_id=f"learn:{row['log_id']}")
    return IncidentInput("", task, task_logs={"build": log}, incident_id=f"test:{row['log_id']}")


async def run(root: Path) -> dict[str, float]:
    rows = read_examples(root)
    learn, test = split(rows)
    stores = Stores(CypherGraphStore(LadybugSession(":memory:")), QdrantVectorStore("bench", 384, path=":memory:"),
                    HashingEmbedder(384))
    llm = JsonLLM(LabelModel())
    extractor = KnowledgeGraphExtractor(default_registry().create("gitlab_ci", StrategyDeps(llm)))
    accumulator = KnowledgeAccumulator(extractor, KnowledgeReviewer(llm), llm, stores)
    navigator = ReasoningNavigator(extractor, llm, stores)
    await stores.graph.open()
    await stores.vectors.open()
    started = time.monotonic()
    try:
        for row in learn:
            await accumulator.process(incident(row, None))
        logs = {id(row): read_log(root, row["build_log"]) for row in learn + test}
        # The baseline knows what the knowledge base knows (each learned cause and its failure excerpt)
        # and matches the whole new log against it; a second figure matches whole logs to whole logs.
        learned_tf = [(cause_of(r), _tf(r["chunk"])) for r in learn]
        df: Counter[str] = Counter(w for _, tf in learned_tf for w in tf)
        logs_tf = [(cause_of(r), _tf(logs[id(r)])) for r in learn]
        logs_df: Counter[str] = Counter(w for _, tf in logs_tf for w in tf)
        hits = Counter[str]()
        for row in test:
            truth, query = cause_of(row), _tf(logs[id(row)])
            evidence, _ = await navigator.gather(incident(row, logs[id(row)]))
            ranked = [c.name for c in evidence.candidates]
            base = baseline_rank(learned_tf, query, df, len(learned_tf))
            whole = baseline_rank(logs_tf, query, logs_df, len(logs_tf))
            hits.update({"top1": truth in ranked[:1], "top3": truth in ranked[:3],
                         "baseline_top1": truth in base[:1], "baseline_top3": truth in base[:3],
                         "logs_top1": truth in whole[:1], "logs_top3": truth in whole[:3]})
    finally:
        await stores.vectors.aclose()
        await stores.graph.aclose()
    n = max(len(test), 1)
    print(f"learned {len(learn)} incidents, diagnosed {len(test)} in {time.monotonic() - started:.1f} s; "
          f"whole log to learned whole logs (not stored by the knowledge base): top1 {hits['logs_top1'] / n:.3f}, "
          f"top3 {hits['logs_top3'] / n:.3f}", file=sys.stderr)
    return {k: round(hits[k] / n, 3) for k in ("top1", "top3", "baseline_top1", "baseline_top3")}


def main() -> int:
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print("usage: python bench/bamboo_retrieval.py DATA_DIR (a LogChunks-layout folder)", file=sys.stderr)
        return 2
    print(json.dumps(asyncio.run(run(Path(sys.argv[1])))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
