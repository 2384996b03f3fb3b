"""Which parts of the knowledge base's fit score move its figures: bench/bamboo_retrieval.py's knowledge-base folds
(no baselines) with one term of the fit score weighted 0, per fold top-1 and novel AUROC.

    python bench/bamboo_ablation.py DATA_DIR [none|FEATURE|SIMILARITY|SYMPTOM|OTHER|SHARE|LOG ...]

Terms (hummingbird_agent/bamboo/retrieval/fit.py): the task features, the best incident similarity, the error lines
(symptoms), components and environments, the cause's share of the project's incidents, the whole log. Prints one
JSON line per term; `none` is the knowledge base as it ranks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bamboo_baselines import hit_rate, truth  # noqa: E402
from bench.bamboo_naming import NamingModel  # noqa: E402
from bench.bamboo_retrieval import folds_of, read_examples, read_log, run_fold  # noqa: E402
from bench.bamboo_tfidf import auroc  # noqa: E402
from hummingbird_agent.bamboo.retrieval import fit  # noqa: E402
from hummingbird_agent.models.gemini import GeminiModel, GeminiSettings  # noqa: E402
from hummingbird_agent.models.retry import RetryPolicy  # noqa: E402
from tests.servers import GeminiServer  # noqa: E402

TERMS = ("none", "FEATURE", "SIMILARITY", "SYMPTOM", "OTHER", "SHARE", "LOG")


async def figures(root: Path, term: str) -> dict[str, object]:
    weight = getattr(fit, f"_W_{term}", None)
    if weight is not None:
        setattr(fit, f"_W_{term}", 0.0)
    rows = read_examples(root)
    logs = {r["log_id"]: read_log(root, r["build_log"]) for r in rows}
    top1, aurocs = [], []
    try:
        with GeminiServer(api_key="bench") as server:
            server.responder = NamingModel()
            model = GeminiModel(GeminiSettings("bench", server.url), RetryPolicy(retries=0))
            try:
                for learn, test in folds_of(rows, 5):
                    kb = await run_fold(learn, test, logs, model, "hashing")
                    truths, learned = [truth(r) for r in test], {truth(r) for r in learn}
                    top1.append(round(hit_rate(truths, kb["ranked"], 1), 3))
                    aurocs.append(round(auroc(kb["top_scores"], [t in learned for t in truths]), 3))
            finally:
                await model.aclose()
    finally:
        if weight is not None:
            setattr(fit, f"_W_{term}", weight)
    return {"without": term, "top1": top1, "top1_mean": round(statistics.mean(top1), 3), "novel_auroc": aurocs,
            "novel_auroc_mean": round(statistics.mean(aurocs), 3), "n": len(rows)}


def main() -> int:
    args = sys.argv[1:]
    terms = args[1:] or list(TERMS)
    if not args or not (Path(args[0]) / "index.jsonl").is_file() or not set(terms) <= set(TERMS):
        print(f"usage: python bench/bamboo_ablation.py DATA_DIR [{'|'.join(TERMS)} ...]", file=sys.stderr)
        return 2
    logging.disable(logging.WARNING)
    for term in terms:
        print(json.dumps(asyncio.run(figures(Path(args[0]), term))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
