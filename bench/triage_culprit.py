"""The culprit search on target-branch histories built in the fake GitLab from the development logs.

    python bench/triage_culprit.py LOGCHUNKS_DIR [--worlds-per-repo N] [--seed S]

A world is one LogChunks repository's `main`: 30 to 60 merged MRs (one merge commit each, by one of three authors), a
pipeline on each merge commit except those it skips (10 %), the job `test` passing (the log up to its labelled
failure, then success) until the break, at a random MR, and failing from there on with the repository's log of one
failure (a copy with its timestamps, durations and ids changed on every run). Noise: before the break, the job fails
now and then with a log of another category of the repository (an unrelated failure, 8 % of runs) or fails and
passes on a retry (flaky, 8 %); another job (`lint`) fails at random (10 %). In 10 % of the worlds the break is
older than the history (every run fails): the answer must then be "since before", never a name. An MR on the
newest merge commit fails the job the same way (another copy); its triage runs with a cold cache, and its culprit
search is graded against the MR that broke `main`.

Prints one JSON line: `n` worlds and those whose MR got the pre-existing verdict (`searched`); where the history holds
the break: `top1` (the named change, or a range's first listed, is the culprit's MR), `named` (share of answers
naming one change) and `named_precision`, `range_share` and `range_holds_culprit`; where it does not:
`since_before` (answers that name nothing); per search: GitLab calls and log reads (mean, max) against the pipelines
searched (mean) and `reads_per_log2`; `folds` (repositories round-robin in 5 folds: top1 per fold, mean and worst);
the `name_only` baseline on the same worlds (the commit of the oldest pipeline of the job's unbroken run of failed
pipelines before the MR's base, by job name and status alone: its top1 and the job lists it reads); and `twentieth`
(one world, 20 MRs on the three newest merge commits, one cache: the calls of the 20th MR's search).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bamboo_retrieval import read_examples, read_log  # noqa: E402
from bench.triage_world import volatile_changed  # noqa: E402
from hummingbird_agent.data_sources import gitlab as gitlab_source  # noqa: E402
from hummingbird_agent.data_sources.direct import ReadTools  # noqa: E402
from hummingbird_agent.tools.registry import ToolRegistry  # noqa: E402
from hummingbird_agent.triage.culprit_model import Culprit  # noqa: E402
from hummingbird_agent.triage.model import Verdict  # noqa: E402
from hummingbird_agent.triage.reader import TriageCache, TriageReader  # noqa: E402
from hummingbird_agent.triage.run import TriageRequest, triage  # noqa: E402
from tests.servers import GitLabServer  # noqa: E402
from tests.triage.conftest import NOW  # noqa: E402
from tests.triage.world import Attempt, CiWorld, sha_of  # noqa: E402

Row = dict[str, Any]
SKIP, UNRELATED, FLAKY, LINT, OLDER = 0.10, 0.08, 0.08, 0.10, 0.10
FOLDS = 5


@dataclass
class World:
    repo: str
    culprit_iid: int | None
    """The MR that broke `main` (None: the break is older than the history)."""
    merges: list[str]
    runs: list[tuple[str, bool]]
    """(merge sha, the job's latest attempt failed) of each pipeline, oldest first: what a name-only reader sees."""


def build(world: CiWorld, rng: random.Random, repo: str, broken: str, others: list[str], first_iid: int = 100
          ) -> World:
    count = rng.randint(30, 60)
    at = 0 if rng.random() < OLDER else rng.randint(2, count)
    copies = [volatile_changed(broken)] + [volatile_changed(volatile_changed(broken)) for _ in range(2)]
    ok = _passing(broken)
    for uid, name in ((50, "bob"), (51, "alice"), (52, "carol")):
        if uid not in world.gl.users:
            world.gl.add_user(uid, name, name=name.title())
    merges, runs = [], []
    for n in range(1, count + 1):
        iid = first_iid + n - 1
        merge = sha_of(repo, "merge", iid)
        world.merged(iid, [sha_of(repo, "c", iid)], merge_sha=merge, author_id=50 + rng.randrange(3))
        merges.append(merge)
        if n < count and rng.random() < SKIP:
            continue
        attempts = _job(rng, n >= at, copies[n % 3], ok, others)
        attempts.append(Attempt("lint", "failed" if rng.random() < LINT else "success", trace="lint\nok\n"))
        world.pipeline(merge, attempts)
        runs.append((merge, attempts[-2].status == "failed"))
    return World(repo, first_iid + at - 1 if at else None, merges, runs)


def _passing(log: str) -> str:
    lines = log.split("\n")
    return "\n".join(lines[: len(lines) * 2 // 3]) + '\nThe command "./ci/run.sh" exited with 0.\n'


def _job(rng: random.Random, broken: bool, failing: str, ok: str, others: list[str]) -> list[Attempt]:
    if broken:
        return [Attempt("test", trace=failing)]
    roll = rng.random()
    if roll < UNRELATED and others:
        return [Attempt("test", trace=rng.choice(others))]
    if roll < UNRELATED + FLAKY and others:
        return [Attempt("test", trace=rng.choice(others)), Attempt("test", "success", trace=ok)]
    return [Attempt("test", "success", trace=ok)]


async def search(gl: GitLabServer, iid: int, cache: TriageCache, job: str = "test"
                 ) -> tuple[Verdict | None, Culprit | None]:
    """The MR's triage: the verdict of `job` and what its culprit search found."""
    tools = ReadTools()
    gitlab_source.register(cast(ToolRegistry, tools), gl.url, gl.read_token)
    found = await triage(TriageReader(tools, "group/project", cache), TriageRequest("group/project", iid, NOW))
    check = next((c for c in found.checks if c.name == job), None)
    return (check.verdict, check.culprit) if check else (None, None)


def name_only(world: World) -> tuple[int | None, int]:
    """The MR of the oldest pipeline of the job's unbroken run of failures ending at the newest, and the pipelines
    it reads."""
    first, read = None, 0
    for sha, failed in reversed(world.runs):
        read += 1
        if not failed:
            break
        first = sha
    if first is None or (read == len(world.runs) and world.runs[0][1]):
        return None, read
    return 100 + world.merges.index(first), read


def blocked(world: CiWorld, iid: int, base: str, log: str) -> None:
    mr = world.mr(iid, base_sha=base, sha=sha_of("mr", iid, base))
    world.pipeline(mr["sha"], [Attempt("test", trace=volatile_changed(log))], ref="feature",
                   source="merge_request_event")


async def one_world(repo: str, broken: str, others: list[str], seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    with GitLabServer() as gl:
        world = CiWorld(gl)
        built = build(world, rng, repo, broken, others)
        blocked(world, 1, built.merges[-1], broken)
        before = len(gl.requests_to(r"/trace$"))
        verdict, culprit = await search(gl, 1, TriageCache())
        triage_reads = 2  # the MR's log and the merge base's: the verdict's own reads
        reads = len(gl.requests_to(r"/trace$")) - before - triage_reads
    guess, baseline_reads = name_only(built)
    return {"repo": repo, "truth": built.culprit_iid, "verdict": verdict.value if verdict else None,
            "culprit": culprit, "reads": max(reads, 0), "baseline": guess, "baseline_reads": baseline_reads}


async def twentieth(broken: str, others: list[str]) -> list[int]:
    rng = random.Random(20)
    with GitLabServer() as gl:
        world = CiWorld(gl)
        built = build(world, rng, "twenty", broken, others)
        cache, costs = TriageCache(), []
        for iid in range(1, 21):
            blocked(world, iid, built.merges[-1 - iid % 3], broken)
            _, culprit = await search(gl, iid, cache)
            costs.append(culprit.calls if culprit else -1)
        return costs


def grade(rows: list[dict[str, Any]]) -> dict[str, Any]:
    held = [r for r in rows if r["truth"] is not None and r["culprit"] is not None]
    named = [r for r in held if r["culprit"].named is not None]
    ranges = [r for r in held if r["culprit"].named is None]

    def first(r: dict[str, Any]) -> int | None:
        changes = r["culprit"].changes
        return changes[0].mr_iid if changes else None

    older = [r for r in rows if r["truth"] is None and r["culprit"] is not None]
    searched = [r["culprit"] for r in rows if r["culprit"] is not None]
    return {"held": len(held), "top1": _share(sum(first(r) == r["truth"] for r in held), len(held)),
            "named": _share(len(named), len(held)),
            "named_precision": _share(sum(r["culprit"].named.mr_iid == r["truth"] for r in named), len(named)),
            "range_share": _share(len(ranges), len(held)),
            "range_holds_culprit": _share(sum(r["truth"] in {c.mr_iid for c in r["culprit"].changes}
                                              for r in ranges), len(ranges)),
            "since_before": f"{sum(r['culprit'].last_good is None and r['culprit'].named is None for r in older)}"
                            f"/{len(older)}",
            "calls_mean": _mean([c.calls for c in searched]), "calls_max": max((c.calls for c in searched), default=0),
            "reads_mean": _mean([r["reads"] for r in rows if r["culprit"]]),
            "reads_max": max((r["reads"] for r in rows if r["culprit"]), default=0),
            "pipelines_searched_mean": _mean([c.searched for c in searched]),
            "reads_per_log2": _mean([r["reads"] / math.log2(max(r["culprit"].searched, 2)) for r in rows
                                     if r["culprit"]]),
            "gaps": sum(bool(c.gap) for c in searched)}


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 2) if values else 0.0


async def main_async(root: Path, per_repo: int, seed: int) -> dict[str, Any]:
    rows = read_examples(root)
    by_repo: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_repo[row["repository"]].append(row)
    results, folds = [], defaultdict(list)
    for index, (repo, repo_rows) in enumerate(sorted(by_repo.items())):
        logs = {r["log_id"]: read_log(root, r["build_log"]) for r in repo_rows}
        for k in range(per_repo):
            row = repo_rows[k % len(repo_rows)]
            others = [logs[r["log_id"]] for r in repo_rows if r["category"] != row["category"]][:4]
            found = await one_world(repo, logs[row["log_id"]], others, seed * 1000 + index * 10 + k)
            results.append(found)
            folds[index % FOLDS].append(found)
    first_repo = sorted(by_repo)[0]
    first_logs = [read_log(root, r["build_log"]) for r in by_repo[first_repo]]
    costs = await twentieth(first_logs[0], first_logs[1:4])
    searched = [r for r in results if r["culprit"] is not None]
    held = [r for r in results if r["truth"] is not None]
    fold_top1 = [grade(f)["top1"] for f in folds.values()]
    fold_top1 = [v for v in fold_top1 if v is not None]
    return {"n": len(results), "pre_existing": sum(r["verdict"] == "pre-existing" for r in results),
            "searched": len(searched), **grade(results),
            "folds": {"k": FOLDS, "top1_mean": _mean(fold_top1), "top1_worst": min(fold_top1, default=None)},
            "name_only": {"top1": _share(sum(r["baseline"] == r["truth"] for r in held), len(held)),
                          "named_when_older": sum(r["baseline"] is not None for r in results if r["truth"] is None),
                          "job_lists_read_mean": _mean([r["baseline_reads"] for r in results])},
            "twentieth": {"calls": costs[-1], "calls_by_mr": costs}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logchunks", type=Path)
    parser.add_argument("--worlds-per-repo", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args.logchunks, args.worlds_per_repo, args.seed))))


if __name__ == "__main__":
    main()
