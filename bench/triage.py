"""Verdicts of the failure triage on MR failures built in the fake GitLab from the development logs.

    python bench/triage.py LOGCHUNKS_DIR CIDIFF_DIR [--limit N]   # N: the first N LogChunks repositories only

Scenarios (bench/triage_world.py), each true by construction: the same failure on the merge base or a recent
target-branch pipeline (another build with the identical labelled chunk, else the same log with its timestamps,
durations and ids changed) is pre-existing; a same-named job failing with another category of the repository
on the base is new; a passing retry or a pass on the same commit is flaky; GitLab's platform failure reasons
and an erased log are infrastructure; a log of a cause the knowledge base learned (two earlier logs of that
category, learned through the real accumulator with the scripted naming model of bench/bamboo_naming.py and the
hashing embedder) is known; a failure the base passes is new; a job the base never ran is unclassified; a hang
without context and a script that prints only `exited with 1`, on the MR and the base, are unclassified
(nothing in the logs tells whether they are the same). Every triage runs with its own empty cache (cold: the
service's cache only lowers the calls). The fingerprint rules were written before this data was looked at;
the knowledge base's known-fit bar was chosen on this LogChunks split, so the `known` figures are not held out.

Prints the wrong verdicts on stderr, then one JSON line: per-verdict precision and recall, `n` failures and
`mrs`, `not_yours_precision` (the share of pre-existing, flaky and infrastructure verdicts whose truth is that
verdict), GitLab calls and log bytes per failure, and the same figures per 4 folds of repositories (mean, worst).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bamboo_naming import NamingModel  # noqa: E402
from bench.bamboo_retrieval import incident, read_examples, read_log  # noqa: E402
from bench.triage_world import MR, Scenario, cidiff_mrs, learned_rows, logchunks_mrs  # noqa: E402
from hummingbird_agent.bamboo.diagnose.known_causes import StoredCauses  # noqa: E402
from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder  # noqa: E402
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText  # noqa: E402
from hummingbird_agent.bamboo.learn.accumulator import KnowledgeAccumulator, Stores  # noqa: E402
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor  # noqa: E402
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer  # noqa: E402
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore  # noqa: E402
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession  # noqa: E402
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore  # noqa: E402
from hummingbird_agent.bamboo.strategies.base import StrategyDeps, default_registry  # noqa: E402
from hummingbird_agent.data_sources import gitlab as gitlab_source  # noqa: E402
from hummingbird_agent.data_sources.direct import ReadTools  # noqa: E402
from hummingbird_agent.models.gemini import GeminiModel, GeminiSettings  # noqa: E402
from hummingbird_agent.models.retry import RetryPolicy  # noqa: E402
from hummingbird_agent.tools.registry import ToolRegistry  # noqa: E402
from hummingbird_agent.triage.evidence import INFRASTRUCTURE_REASONS  # noqa: E402
from hummingbird_agent.triage.model import NOT_YOURS, Triage, Verdict  # noqa: E402
from hummingbird_agent.triage.reader import TriageCache, TriageReader  # noqa: E402
from hummingbird_agent.triage.run import TriageRequest, triage  # noqa: E402
from tests.servers import GeminiServer, GitLabServer  # noqa: E402
from tests.triage.conftest import NOW  # noqa: E402
from tests.triage.world import Attempt, CiWorld, sha_of  # noqa: E402

FOLDS = 4
Row = dict[str, Any]


async def learn(stores: Stores, held: list[Row], logs: dict[str, str]) -> None:
    """The knowledge base's past incidents, learned as `bamboo populate` does (scripted naming model)."""
    server = GeminiServer(api_key="bench")
    with server:
        server.responder = NamingModel()
        model = GeminiModel(GeminiSettings("bench", server.url), RetryPolicy(retries=0))
        try:
            llm = JsonLLM(ModelText(model, "bench-naming"))
            extractor = KnowledgeGraphExtractor(default_registry().create("gitlab_ci", StrategyDeps(llm)))
            accumulator = KnowledgeAccumulator(extractor, KnowledgeReviewer(llm), llm, stores)
            for row in held:
                await accumulator.process(incident(row, None, logs[row["log_id"]]))
        finally:
            await model.aclose()


def seed(world: CiWorld, iid: int, mr: MR) -> int:
    """The MR, its merge base's and the target branch's pipelines in the fake GitLab; the analysed pipeline."""
    base_sha, sha = sha_of(mr.repo, "base", iid), sha_of(mr.repo, "mr", iid)
    world.mr(iid, base_sha=base_sha, sha=sha)
    base = [Attempt(s.base_job, "success" if s.base.passed else "failed", s.base.trace, s.base.failure_reason)
            for s in mr.scenarios if s.base is not None]
    if base:
        world.pipeline(base_sha, base)
    for s in mr.scenarios:
        if s.target is not None:
            world.pipeline(sha_of(mr.repo, "target", iid), [Attempt(s.job, trace=s.target.trace)])
    passes = [Attempt(s.job, "success", trace="ok\n") for s in mr.scenarios if s.same_sha_passes]
    if passes:
        world.pipeline(sha, passes, ref="feature")
    attempts: list[Attempt] = []
    for s in mr.scenarios:
        attempts.append(Attempt(s.job, trace=s.trace, failure_reason=s.failure_reason))
        if s.retry_passes:
            attempts.append(Attempt(s.job, "success", trace="ok\n"))
    return world.pipeline(sha, attempts, ref="feature", source="merge_request_event")


async def run_all(mrs: list[MR], stores: Stores) -> list[tuple[MR, Triage]]:
    known = StoredCauses(stores)
    out: list[tuple[MR, Triage]] = []
    gl = GitLabServer()
    with gl:
        tools = ReadTools()
        gitlab_source.register(cast(ToolRegistry, tools), gl.url, gl.read_token)
        worlds: dict[str, CiWorld] = {}
        seeded: list[tuple[MR, int, int]] = []
        iids: Counter[str] = Counter()
        for mr in mrs:
            world = worlds.get(mr.repo) or worlds.setdefault(mr.repo, CiWorld(gl, len(worlds) + 1, mr.repo))
            iids[mr.repo] += 1
            seeded.append((mr, iids[mr.repo], seed(world, iids[mr.repo], mr)))
        for mr, iid, pipeline in seeded:
            reader = TriageReader(tools, mr.repo, TriageCache())
            out.append((mr, await triage(reader, TriageRequest(mr.repo, iid, NOW, pipeline_id=pipeline), known)))
        if gl.errors:
            raise SystemExit(f"fake GitLab hit a bug: {gl.errors}")
    return out


def graded(results: list[tuple[MR, Triage]]) -> list[tuple[Scenario, str, str, Triage]]:
    """(scenario, verdict, reason with the fingerprint's first lines, its triage) per failed job."""
    rows = []
    for mr, found in results:
        by_name = {c.name: c for c in found.checks}
        for s in mr.scenarios:
            check = by_name.get(s.job)
            reason = f"{check.reason}; fingerprint {list(check.fingerprint.lines[:2])}" if check else ""
            rows.append((s, check.verdict.value if check else "missing", reason, found))
    return rows


def figures(rows: list[tuple[Scenario, str, str, Triage]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows), "accuracy": round(sum(v == s.truth for s, v, _, _ in rows) / len(rows), 3)}
    for verdict in Verdict:
        said = [s.truth == verdict for s, v, _, _ in rows if v == verdict]
        true = [v == verdict for s, v, _, _ in rows if s.truth == verdict]
        out[verdict.value] = {"precision": round(sum(said) / len(said), 3) if said else None,
                              "recall": round(sum(true) / len(true), 3) if true else None,
                              "said": len(said), "true": len(true)}
    not_yours = [s.truth == v for s, v, _, _ in rows if v in NOT_YOURS]
    out["not_yours_precision"] = round(sum(not_yours) / len(not_yours), 3) if not_yours else None
    out["not_yours_verdicts"] = len(not_yours)
    return out


def name_only(s: Scenario) -> str:
    """The baseline "it failed on main too": the same job lists and failure reasons as the triage, no logs. A job
    whose last run on the merge base or a recent target-branch pipeline failed is called pre-existing."""
    if s.retry_passes or s.same_sha_passes:
        return Verdict.FLAKY.value
    if (s.failure_reason or "") in INFRASTRUCTURE_REASONS or s.trace is None:
        return Verdict.INFRASTRUCTURE.value
    on_base = s.base is not None and s.base_job == s.job
    if (on_base and s.base is not None and not s.base.passed) or s.target is not None:
        return Verdict.PRE_EXISTING.value
    return Verdict.NEW.value if on_base else Verdict.UNCLASSIFIED.value


def cost(results: list[tuple[MR, Triage]]) -> dict[str, Any]:
    per_calls = [found.calls / max(len(mr.scenarios), 1) for mr, found in results]
    per_bytes = [found.log_bytes / max(len(mr.scenarios), 1) for mr, found in results]
    failures = sum(len(mr.scenarios) for mr, _ in results)
    return {"calls_per_failure_mean": round(sum(f.calls for _, f in results) / failures, 2),
            "calls_per_failure_max": round(max(per_calls), 2),
            "log_bytes_per_failure_mean": round(sum(f.log_bytes for _, f in results) / failures),
            "log_bytes_per_failure_max": round(max(per_bytes))}


def by_folds(rows: list[tuple[Scenario, str, str, Triage]]) -> dict[str, Any]:
    """Repositories dealt round-robin (sorted by name, per data set) into FOLDS folds."""
    repos = sorted({(s.dataset, s.repo) for s, *_ in rows})
    fold = {repo: n % FOLDS for n, (_, repo) in enumerate(repos)}
    parts = [figures([r for r in rows if fold[r[0].repo] == f]) for f in range(FOLDS)]
    out: dict[str, Any] = {}
    for metric in ("accuracy", "not_yours_precision"):
        values = [p[metric] for p in parts if p[metric] is not None]
        out[metric] = {"mean": round(statistics.mean(values), 3), "worst": min(values),
                       "per_fold": [p[metric] for p in parts]}
    return out


async def main_async(logchunks: Path, cidiff: Path, limit: int) -> dict[str, Any]:
    started = time.monotonic()
    rows = read_examples(logchunks)
    if limit:
        keep = sorted({r["repository"] for r in rows})[:limit]
        rows = [r for r in rows if r["repository"] in keep]
    logs = {r["log_id"]: read_log(logchunks, r["build_log"]) for r in rows}
    held = learned_rows(rows)
    mrs = logchunks_mrs(rows, logs, held) + cidiff_mrs(cidiff)[: 2 * limit if limit else None]
    stores = Stores(CypherGraphStore(LadybugSession(":memory:")), QdrantVectorStore("bench", 384, path=":memory:"),
                    HashingEmbedder(384))
    await stores.graph.open()
    await stores.vectors.open()
    try:
        await learn(stores, held, logs)
        learned_s = time.monotonic() - started
        results = await run_all(mrs, stores)
    finally:
        await stores.vectors.aclose()
        await stores.graph.aclose()
    rows_out = graded(results)
    for s, verdict, reason, _ in rows_out:
        if verdict != s.truth:
            print(f"WRONG {s.repo} [{s.kind}] job {s.job} logs {','.join(s.logs)}: truth {s.truth}, said {verdict}"
                  f" ({reason})", file=sys.stderr)
    out = figures(rows_out)
    out.update(mrs=len(results), learned_incidents=len(held), **cost(results), folds=by_folds(rows_out))
    out["by_dataset"] = {d: figures([r for r in rows_out if r[0].dataset == d])["accuracy"]
                         for d in sorted({s.dataset for s, *_ in rows_out})}
    out["by_kind"] = {k: f"{sum(v == s.truth for s, v, _, _ in g)}/{len(g)}" for k, g in _groups(rows_out).items()}
    out["truth_counts"] = dict(Counter(s.truth for s, *_ in rows_out))
    out["false_not_yours_by_kind"] = dict(Counter(s.kind for s, v, _, _ in rows_out
                                                  if v in NOT_YOURS and v != s.truth))
    baseline = [(s, name_only(s), "", found) for s, _, _, found in rows_out]
    out["baseline_name_only"] = {k: figures(baseline)[k] for k in ("not_yours_precision", "not_yours_verdicts")}
    out["baseline_name_only"]["folds"] = by_folds(baseline)["not_yours_precision"]
    out.update(learn_s=round(learned_s, 1), seconds=round(time.monotonic() - started, 1))
    return out


def _groups(rows: list[tuple[Scenario, str, str, Triage]]) -> dict[str, list[tuple[Scenario, str, str, Triage]]]:
    out: dict[str, list[tuple[Scenario, str, str, Triage]]] = {}
    for row in rows:
        kind = row[0].kind.split(" failure_reason")[0] if row[0].kind.startswith("failure_reason") else row[0].kind
        out.setdefault("failure_reason" if kind.startswith("failure_reason") else kind, []).append(row)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logchunks", type=Path, help="LogChunks-layout folder (index.jsonl and the logs it names)")
    parser.add_argument("cidiff", type=Path, help="CiDiff-layout folder (one folder per build: pass.log, fail.log)")
    parser.add_argument("--limit", type=int, default=0, help="the first N repositories of each data set only")
    args = parser.parse_args()
    if not (args.logchunks / "index.jsonl").is_file() or not args.cidiff.is_dir():
        print("usage: python bench/triage.py LOGCHUNKS_DIR CIDIFF_DIR (LOGCHUNKS_DIR needs an index.jsonl)",
              file=sys.stderr)
        return 2
    print(json.dumps(asyncio.run(main_async(args.logchunks, args.cidiff, args.limit))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
