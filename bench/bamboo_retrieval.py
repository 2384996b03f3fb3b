"""Retrieval quality of the knowledge base on a LogChunks-layout folder, k-fold per project, against baselines
that get the same information.

Each repository (the project) has its labelled logs split into `--folds` folds by log id; for every fold the
other folds are learned (labelled chunk -> failure excerpt, category -> cause, named by the paraphrasing model
of bench/bamboo_naming.py behind the fake Gemini server and the real Gemini adapter; the whole log only feeds
the incident's whole-log vector, as a job's log tail does in production) and the fold's logs are diagnosed from
the whole log. Scored per test log: the true cause among the ranked causes (a cause node counts as the true
cause its incidents mostly have). Baselines (bench/bamboo_baselines.py), all restricted to the same project as
the knowledge base's project clue: one signal each (TF-IDF of the localised failure excerpt against the learned
excerpts, the whole new log against them, the most frequent learned cause, the whole new log against the learned
whole logs), and both signals the knowledge base ranks with, excerpt + w x whole log, w chosen on the other folds
(`same_project_two_signal_*`). `ceiling`: the share of test logs whose cause was learned in their fold (no
ranking does better). `novel_auroc`: how well the top candidate's score separates test logs whose cause was
learned from those whose cause never was. `top1_with_resolution` / `top1_with_procedure`: the share of test logs
whose top candidate is the true cause and carries a learned resolution / investigation procedure (retrieval returns
neither). `cause_nodes_per_true_cause` and `wrongly_merged_incidents` (learned
incidents in a node whose incidents mostly have another cause) measure the naming model's and the knowledge
base's merges together; the naming model never sees which label a shown name belongs to.

    python bench/bamboo_retrieval.py [DATA_DIR] [--folds 5] [--embedder hashing|minilm]
    # DATA_DIR defaults to $LOGCHUNKS_DIR; prints a line per fold, ends with one JSON line
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import logging
import os
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bamboo_baselines import WEIGHTS, baselines, choose_weights, hit_rate, truth  # noqa: E402
from bench.bamboo_naming import NamingModel  # noqa: E402
from bench.bamboo_tfidf import auroc  # noqa: E402
from hummingbird_agent.bamboo.diagnose.navigator import ReasoningNavigator  # noqa: E402
from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder  # noqa: E402
from hummingbird_agent.bamboo.embeddings.minilm import MiniLMEmbedder  # noqa: E402
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText  # noqa: E402
from hummingbird_agent.bamboo.learn.accumulator import KnowledgeAccumulator, Stores  # noqa: E402
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor  # noqa: E402
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer  # noqa: E402
from hummingbird_agent.bamboo.stores import owners  # noqa: E402
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore  # noqa: E402
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession  # noqa: E402
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore  # noqa: E402
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry  # noqa: E402
from hummingbird_agent.models.gemini import GeminiModel, GeminiSettings  # noqa: E402
from hummingbird_agent.models.retry import RetryPolicy  # noqa: E402
from tests.servers import GeminiServer  # noqa: E402

Row = dict[str, Any]


def read_examples(root: Path) -> list[Row]:
    return [json.loads(line) for line in (root / "index.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]


def read_log(root: Path, relative: str) -> str:
    path = root / relative
    raw = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    return raw.decode("utf-8", errors="replace").replace("\r\n", "\n")


def folds_of(rows: list[Row], k: int) -> list[tuple[list[Row], list[Row]]]:
    """Per repository, logs sorted by id go to folds round-robin; fold f is diagnosed, the rest learned."""
    by_repo: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_repo[row["repository"]].append(row)
    fold: dict[int, int] = {}
    for repo_rows in by_repo.values():
        for position, row in enumerate(sorted(repo_rows, key=lambda r: str(r["log_id"]))):
            fold[id(row)] = position % k
    return [([r for r in rows if fold[id(r)] != f], [r for r in rows if fold[id(r)] == f]) for f in range(k)]


def incident(row: Row, log: str | None, whole: str = "") -> IncidentInput:
    """A learned incident (`log` None): the labelled chunk as its log, the whole log only for the
    whole-log vector; a diagnosed one: its whole log."""
    task = {"project": row["repository"], "job": "build", "status": "failed"}
    if log is None:
        said = json.dumps([row["repository"], row["category"]])
        text = f"Cause: {said}\n\nFailure excerpt:\n{row['chunk']}"
        return IncidentInput(text, task, task_logs={"build": row["chunk"]}, incident_id=f"learn:{row['log_id']}",
                             full_logs={"build": whole} if whole else {})
    return IncidentInput("", task, task_logs={"build": log}, incident_id=f"test:{row['log_id']}")


async def run_fold(learn: list[Row], test: list[Row], logs: dict[str, str], model: Any, embedder: str,
                   ) -> dict[str, Any]:
    stores = Stores(CypherGraphStore(LadybugSession(":memory:")), QdrantVectorStore("bench", 384, path=":memory:"),
                    MiniLMEmbedder() if embedder == "minilm" else HashingEmbedder(384))
    llm = JsonLLM(ModelText(model, "bench-naming"))
    extractor = KnowledgeGraphExtractor(default_registry().create("gitlab_ci", StrategyDeps(llm)))
    accumulator = KnowledgeAccumulator(extractor, KnowledgeReviewer(llm), llm, stores)
    navigator = ReasoningNavigator(extractor, llm, stores)
    await stores.graph.open()
    await stores.vectors.open()
    try:
        for row in learn:
            await accumulator.process(incident(row, None, logs[row["log_id"]]))
        owner = {f"learn:{r['log_id']}": truth(r) for r in learn}
        nodes: dict[str, Counter[str]] = {}
        for c in await stores.graph.nodes("Cause"):  # stored names are keyed by project; candidates are plain
            nodes.setdefault(owners.plain(c.name), Counter()).update(owner[g] for g in c.incidents if g in owner)
        meaning = {name: votes.most_common(1)[0][0] for name, votes in nodes.items() if votes}
        ranked, tops, carried = [], [], []
        for row in test:
            evidence, index = await navigator.gather(incident(row, logs[row["log_id"]]))
            ranked.append([meaning.get(c.name, c.name) for c in evidence.candidates])
            tops.append(evidence.candidates[0].score if evidence.candidates else 0.0)
            top = evidence.candidates[0] if evidence.candidates else None
            carried.append((bool(top and top.resolutions), bool(top and index.procedures.get(top.name))))
    finally:
        await stores.vectors.aclose()
        await stores.graph.aclose()
    return {"ranked": ranked, "top_scores": tops, "nodes": nodes, "carried": carried}


def fold_figures(learn: list[Row], test: list[Row], kb: dict[str, Any], base: dict[str, Any],
                 weight: float) -> dict[str, float]:
    truths = [truth(r) for r in test]
    learned = {truth(r) for r in learn}
    known = [t in learned for t in truths]
    per_cause: dict[str, set[str]] = defaultdict(set)
    for name, votes in kb["nodes"].items():
        for cause in votes:
            per_cause[cause].add(name)
    impure = sum(sum(v.values()) - v.most_common(1)[0][1] for v in kb["nodes"].values() if v)
    return {"top1": hit_rate(truths, kb["ranked"], 1), "top3": hit_rate(truths, kb["ranked"], 3),
            "same_project_tfidf_top1": hit_rate(truths, base["tfidf"], 1),
            "same_project_tfidf_top3": hit_rate(truths, base["tfidf"], 3),
            "same_project_tfidf_whole_query_top1": hit_rate(truths, base["tfidf_whole_query"], 1),
            "same_project_majority_top1": hit_rate(truths, base["majority"], 1),
            "same_project_majority_top3": hit_rate(truths, base["majority"], 3),
            "whole_log_top1": hit_rate(truths, base["whole"], 1), "whole_log_top3": hit_rate(truths, base["whole"], 3),
            "same_project_two_signal_top1": hit_rate(truths, base["two_signal"][weight], 1),
            "same_project_two_signal_top3": hit_rate(truths, base["two_signal"][weight], 3),
            "ceiling": known.count(True) / max(len(known), 1),
            "novel_auroc": auroc(kb["top_scores"], known),
            "same_project_tfidf_novel_auroc": auroc(base["tfidf_top"], known),
            "cause_nodes_per_true_cause": statistics.mean(len(v) for v in per_cause.values()),
            "wrongly_merged_incidents": impure / max(len(learn), 1),
            "top1_with_resolution": _right_and(truths, kb, 0), "top1_with_procedure": _right_and(truths, kb, 1),
            "n": len(test), "novel": known.count(False)}


def _right_and(truths: list[str], kb: dict[str, Any], which: int) -> float:
    """Share of test logs whose top candidate is the true cause and comes with a learned resolution (`which`
    0) or investigation procedure (1): what a diagnosis hands over beyond the name of a past cause."""
    hits = [bool(r[:1] == [t] and c[which]) for t, r, c in zip(truths, kb["ranked"], kb["carried"], strict=True)]
    return hits.count(True) / max(len(hits), 1)


class MergeLog(logging.Handler):
    """Collects the accumulator's cause-name merges (new name, stored name) for the hand-checked sample: by
    name embedding (learn.causes) and by the fit of the new name's incident (learn.fit_merge)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.merges: list[tuple[str, str]] = []
        self.by_fit = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("cause %r merged into"):
            self.merges.append((str(record.args[0]), str(record.args[1])))  # type: ignore[index]
            self.by_fit += record.name.endswith("fit_merge")


# Figures where a higher value is worse: their worst fold is the highest.
LOWER_IS_BETTER = ("cause_nodes_per_true_cause", "wrongly_merged_incidents")


def summary(per_fold: list[dict[str, float]]) -> dict[str, Any]:
    """Mean and worst fold of every figure; counts summed."""
    out: dict[str, Any] = {}
    for metric in per_fold[0]:
        values = [f[metric] for f in per_fold]
        if metric in ("n", "novel"):
            out[metric] = sum(values)
            continue
        out[metric] = round(statistics.mean(values), 3)
        out[f"{metric}_worst_fold"] = round(max(values) if metric in LOWER_IS_BETTER else min(values), 3)
    return out


async def run(root: Path, k: int, embedder: str, only: int = 0, fold: int | None = None) -> dict[str, Any]:
    merges = MergeLog()
    for name in ("causes", "fit_merge"):
        causes_log = logging.getLogger(f"hummingbird_agent.bamboo.learn.{name}")
        causes_log.addHandler(merges)
        causes_log.setLevel(logging.INFO)
    rows = read_examples(root)
    logs = {r["log_id"]: read_log(root, r["build_log"]) for r in rows}
    naming = NamingModel()
    splits = folds_of(rows, k)
    base = [baselines(learn, test, logs) for learn, test in splits]
    weights = choose_weights([{w: hit_rate([truth(r) for r in test], b["two_signal"][w], 1) for w in WEIGHTS}
                              for (_, test), b in zip(splits, base, strict=True)])
    per_fold = []
    started = time.monotonic()
    with GeminiServer(api_key="bench") as server:
        server.responder = naming
        model = GeminiModel(GeminiSettings("bench", server.url), RetryPolicy(retries=0))
        try:
            chosen = list(range(k))[: only or k] if fold is None else [fold]
            for number in chosen:
                learn, test = splits[number]
                kb = await run_fold(learn, test, logs, model, embedder)
                figures = fold_figures(learn, test, kb, base[number], weights[number])
                per_fold.append(figures)
                print(f"fold {number}: {json.dumps({m: round(v, 3) for m, v in figures.items()})}", file=sys.stderr)
        finally:
            await model.aclose()
    out = summary(per_fold)
    out["same_project_two_signal_weights"] = [weights[n] for n in chosen]
    for new, stored in sorted(set(merges.merges))[:25]:
        print(f"merged: {new!r} -> {stored!r}", file=sys.stderr)
    out.update({"folds": k, "folds_run": len(per_fold), "embedder": embedder,
                "names_reused": naming.calls.get("reused", 0),
                "names_merged": len(merges.merges), "names_merged_by_fit": merges.by_fit,
                "seconds": round(time.monotonic() - started, 1)})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=Path(os.environ.get("LOGCHUNKS_DIR") or "."))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--embedder", default="hashing", choices=("hashing", "minilm"))
    parser.add_argument("--only-folds", type=int, default=0, help="run the first N folds only (a quick look)")
    parser.add_argument("--fold", type=int, help="run this fold only (0-based)")
    args = parser.parse_args()
    if not (args.data / "index.jsonl").is_file():
        print(f"usage: python bench/bamboo_retrieval.py DATA_DIR (a LogChunks-layout folder with index.jsonl; "
              f"{args.data} has none)", file=sys.stderr)
        return 2
    print(json.dumps(asyncio.run(run(args.data, args.folds, args.embedder, args.only_folds, args.fold))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
