"""The culprit search by test cases on target-branch histories whose failing job uploads JUnit reports.

    python bench/triage_culprit_cases.py [--worlds-per-seed N] [--seeds 1,2,3,4,5]

A world is one `main` of 30 to 60 merged MRs (one merge commit each, by one of three authors), a pipeline on each
merge commit except those it skips (10 %), and the job `unit-tests` with 4 to 8 test cases in its JUnit report. One,
two or three of its cases break, each at its own random merge (50 / 30 / 20 %), and fail from there on. Noise: the
job uploads no report on 10 % of its runs (its log is still there); in 30 % of the worlds one broken case also fails
on 10 % of the runs before its break, with its break's message (flaky); in 20 % one broken case is added already
failing (older reports do not list it); one other case fails on 5 % of every world's runs; `lint` fails at random
(10 %). In 10 % of the worlds one case's break is older than the history. The newest merge's pipeline always runs
and uploads its report. An MR on the newest merge fails the broken cases (in 20 % of the worlds with two or more,
only some: it fixed the others). The true culprit is the merge of the earliest break of the cases the MR fails; when
no pipeline ran before it, the right answer is "since before", never a name.

Four answers per world, on the same world:
- `cases`: the MR's triage (cold cache) and its culprit search by test cases, as the service runs it;
- `log_only`: the search by logs the service ran before, from the same failing run (the merge base's), its job list
  and log read first, as the triage reads them before a search;
- `name_only`: the commit of the oldest pipeline of the job's unbroken run of failed pipelines (job status alone);
- `case_streak`: per failed case, the oldest report of its unbroken run of failures read newest first (a report not
  uploaded is stepped over), the earliest of them named: every report the search may read, read linearly.

Prints one JSON line: `n` worlds; per answer, where the history holds the break (`held`): `top1` (the named change
is the culprit), `named`, `range_holds` (the named change, or the range, holds the culprit); over all worlds:
`wrong_name` (a change named that is not the culprit, the worst outcome); where the break is older: `since_before`;
`calls` per search (mean, max; the baselines' reads: job lists or reports, plus the pipelines' page and the named
commit's MR); `folds` (one a seed: top1 and wrong_name, mean and worst); `by_kind` (top1 and wrong_name of the worlds
with each kind of noise). The generator, its rates and the seeds were fixed before any figure was looked at.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.triage_culprit import World, _mean, _share, name_only, search  # noqa: E402
from hummingbird_agent.data_sources import gitlab as gitlab_source  # noqa: E402
from hummingbird_agent.data_sources.direct import ReadTools  # noqa: E402
from hummingbird_agent.tools.registry import ToolRegistry  # noqa: E402
from hummingbird_agent.triage.culprit import Suspect, find_culprit  # noqa: E402
from hummingbird_agent.triage.culprit_model import Culprit  # noqa: E402
from hummingbird_agent.triage.evidence import by_name  # noqa: E402
from hummingbird_agent.triage.reader import TriageCache, TriageReader  # noqa: E402
from tests.servers import GitLabServer  # noqa: E402
from tests.triage.conftest import NOW  # noqa: E402
from tests.triage.culprit_world import authors, cases_attempt, cases_mr  # noqa: E402
from tests.triage.world import Attempt, CiWorld, sha_of  # noqa: E402

JOB, PROJECT, FIRST_IID = "unit-tests", "group/project", 100
SKIP, MISSING, LINT, OLDER = 0.10, 0.10, 0.10, 0.10
FLAKY_WORLD, FLAKY_RATE, ADDED, OTHER_FAILS, SUBSET = 0.30, 0.10, 0.20, 0.05, 0.20
BROKEN_COUNTS, BROKEN_WEIGHTS = (1, 2, 3), (0.5, 0.3, 0.2)
METHODS = ("cases", "log_only", "name_only", "case_streak")
Answer = tuple[int | None, frozenset[int], int]
"""(the change named or None, the changes answered, the calls it cost)."""


@dataclass(frozen=True)
class Truth:
    culprit_iid: int | None
    """The merge of the MR's cases' earliest break (None: no pipeline ran before it)."""
    kinds: frozenset[str]
    mr_cases: tuple[str, ...]
    runs: World
    reports: tuple[tuple[int, dict[str, str] | None], ...]
    """(merge number, each listed case's status or None: no report uploaded) of each pipeline, oldest first."""


def build(world: CiWorld, rng: random.Random) -> Truth:
    count = rng.randint(30, 60)
    names = [f"test_{k:02d}" for k in range(rng.randint(4, 8))]
    broken = rng.sample(names, rng.choices(BROKEN_COUNTS, BROKEN_WEIGHTS)[0])
    breaks = {name: rng.randint(2, count) for name in broken}
    kinds = {"one_case" if len(broken) == 1 else "several_cases"}
    if rng.random() < OLDER:
        breaks[broken[0]] = 1
    added = {name: breaks[name] for name in broken[-1:] if rng.random() < ADDED and breaks[name] > 1}
    flaky = rng.choice(broken) if rng.random() < FLAKY_WORLD else None
    other = rng.choice([n for n in names if n not in broken])
    mr_cases = tuple(broken)
    if len(broken) > 1 and rng.random() < SUBSET:
        mr_cases = tuple(rng.sample(broken, rng.randint(1, len(broken) - 1)))
    authors(world)
    merges, runs, reports, flakes = [], [], [], 0
    for n in range(1, count + 1):
        iid = FIRST_IID + n - 1
        merges.append(world.merged(iid, [sha_of(PROJECT, "c", iid)], author_id=50 + rng.randrange(3))[
            "merge_commit_sha"])
        if n < count and rng.random() < SKIP:
            continue
        present = [c for c in names if n >= added.get(c, 1)]
        failed = [c for c in broken if c in present and n >= breaks[c]]
        if flaky is not None and n < breaks[flaky] and flaky in present and rng.random() < FLAKY_RATE:
            failed.append(flaky)
            flakes += 1
        if rng.random() < OTHER_FAILS:
            failed.append(other)
        attempt = cases_attempt(failed, JOB, run=n, cases=present)
        report: dict[str, str] | None = {c: "failed" if c in failed else "success" for c in present}
        if n < count and rng.random() < MISSING:
            attempt, report = replace(attempt, cases=None), None
        world.pipeline(merges[-1], [attempt, Attempt("lint", "failed" if rng.random() < LINT else "success",
                                                     trace="lint\nok\n")])
        runs.append((merges[-1], bool(failed)))
        reports.append((n, report))
    first = min(breaks[c] for c in mr_cases)
    truth = FIRST_IID + first - 1 if any(n < first for n, _ in reports) else None
    kinds |= {k for k, on in (("older", truth is None), ("added", bool(set(added) & set(mr_cases))),
                              ("flaky", flakes > 0 and flaky in mr_cases),
                              ("subset", len(mr_cases) < len(broken))) if on}
    cases_mr(world, 1, merges[-1], mr_cases, cases=names)
    return Truth(truth, frozenset(kinds), mr_cases, World("cases", truth, merges, runs), tuple(reports))


async def log_only(gl: GitLabServer, base: str) -> Culprit | None:
    """The search by logs from the merge base's failing run, its job list and log read first (as the triage does)."""
    tools = ReadTools()
    gitlab_source.register(cast(ToolRegistry, tools), gl.url, gl.read_token)
    reader = TriageReader(tools, PROJECT, TriageCache())
    pipeline = next(p for p in await reader.pipelines(ref="main", limit=100, page=1) if p.get("sha") == base)
    job = by_name((await reader.jobs(pipeline)).jobs)[JOB][-1]
    await reader.log(job)
    return await find_culprit(reader, PROJECT, "main", NOW.isoformat(), Suspect(JOB, pipeline, job))


def case_streak(truth: Truth) -> Answer:
    """Per MR case, the oldest report of its unbroken run of failures (read newest first, an unread report stepped
    over); the earliest named, or nothing when a run reaches the oldest report."""
    oldest, read = len(truth.reports), 0
    for case in truth.mr_cases:
        for i in range(len(truth.reports) - 1, -1, -1):
            read = max(read, len(truth.reports) - i)
            report = truth.reports[i][1]
            if report is not None and report.get(case) != "failed":
                break
            if report is not None:
                oldest = min(oldest, i)
        else:
            return None, frozenset(), read + 1
    named = FIRST_IID + truth.reports[oldest][0] - 1
    return named, frozenset({named}), read + 2


def answer(culprit: Culprit | None) -> Answer:
    if culprit is None:
        return None, frozenset(), 0
    named = culprit.named
    return (named.mr_iid if named else None), frozenset(c.mr_iid for c in culprit.changes), culprit.calls


async def one_world(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    with GitLabServer() as gl:
        world = CiWorld(gl)
        truth = build(world, rng)
        verdict, culprit = await search(gl, 1, TriageCache(), job=JOB)
        by_logs = await log_only(gl, truth.runs.merges[-1])
    guess, reads = name_only(truth.runs)
    return {"truth": truth.culprit_iid, "kinds": sorted(truth.kinds), "verdict": verdict.value if verdict else None,
            "cases": answer(culprit), "log_only": answer(by_logs),
            "name_only": (guess, frozenset({guess} if guess else ()), reads + 2), "case_streak": case_streak(truth)}


def grade(rows: list[dict[str, Any]], method: str) -> dict[str, Any]:
    held = [r for r in rows if r["truth"] is not None]
    older = [r for r in rows if r["truth"] is None]
    answers = [r[method] for r in rows]
    return {"held": len(held), "top1": _share(sum(r[method][0] == r["truth"] for r in held), len(held)),
            "named": _share(sum(r[method][0] is not None for r in held), len(held)),
            "range_holds": _share(sum(r["truth"] in r[method][1] for r in held), len(held)),
            "wrong_name": _share(sum(r[method][0] not in (None, r["truth"]) for r in rows), len(rows)),
            "since_before": f"{sum(r[method][0] is None for r in older)}/{len(older)}",
            "calls_mean": _mean([a[2] for a in answers]), "calls_max": max((a[2] for a in answers), default=0)}


def folds(by_seed: dict[int, list[dict[str, Any]]], method: str) -> dict[str, Any]:
    top1 = [v for v in (grade(rows, method)["top1"] for rows in by_seed.values()) if v is not None]
    wrong = [v for v in (grade(rows, method)["wrong_name"] for rows in by_seed.values()) if v is not None]
    return {"k": len(by_seed), "n": [len(rows) for rows in by_seed.values()], "top1_mean": _mean(top1),
            "top1_worst": min(top1, default=None), "wrong_name_mean": _mean(wrong),
            "wrong_name_worst": max(wrong, default=None)}


def by_kind(rows: list[dict[str, Any]], method: str) -> dict[str, Any]:
    kinds = sorted({k for r in rows for k in r["kinds"]})
    out = {}
    for kind in kinds:
        graded = grade([r for r in rows if kind in r["kinds"]], method)
        out[kind] = {"n": sum(kind in r["kinds"] for r in rows), "top1": graded["top1"],
                     "wrong_name": graded["wrong_name"]}
    return out


async def main_async(seeds: list[int], per_seed: int) -> dict[str, Any]:
    by_seed: dict[int, list[dict[str, Any]]] = {}
    for seed in seeds:
        by_seed[seed] = [await one_world(seed * 1000 + k) for k in range(per_seed)]
    rows = [r for found in by_seed.values() for r in found]
    return {"n": len(rows), "seeds": seeds, "pre_existing": sum(r["verdict"] == "pre-existing" for r in rows),
            **{m: {**grade(rows, m), "folds": folds(by_seed, m), "by_kind": by_kind(rows, m)} for m in METHODS}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds-per-seed", type=int, default=20)
    parser.add_argument("--seeds", default="1,2,3,4,5")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    print(json.dumps(asyncio.run(main_async(seeds, args.worlds_per_seed))))


if __name__ == "__main__":
    main()
