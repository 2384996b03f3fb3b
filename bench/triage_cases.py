"""Test-case worlds of bench/triage.py: MRs whose failed jobs uploaded unit test reports, built in the fake GitLab for
the development logs' projects (each LogChunks repository; the job's log is one of its failing builds, the reports
carry synthetic case names), the truth of every case and job known by construction:

- `mixed`: two failed cases fail on the merge base too, one passes there (2 pre-existing, 1 new; the job new);
- `all_base`: every failed case fails on the base (pre-existing);
- `retry`: a case passes in a retried pipeline of the same commit, the other fails on the base (flaky,
  pre-existing; the job pre-existing);
- `main_flip`: a case the base passes failed and passed on one commit of `main` (flaky, from history);
- `target`: no pipeline on the base, the case fails on a recent `main` pipeline (pre-existing);
- `new`: the base passes every failed case (new);
- `added`: the case is absent from the base's report, whose job passed (new: a test the MR added);
- `unseen`: the job never ran on the base or `main` (unclassified);
- `parallel`: shard 1/2 fails a case the base fails, shard 2/2 a new one; GitLab files both under the suite
  `unit`, so each shard gets the whole suite's cases: shard 1's truth is pre-existing, the triage says new.

Every base and `main` report also lists passing cases (with output), so reports have a realistic weight.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from bench.triage_figures import ratio
from bench.triage_run import triage_all
from hummingbird_agent.triage.model import NOT_YOURS, Triage, TriageLimits
from tests.triage.world import Attempt, Case, CiWorld, sha_of

# Passing cases every base and `main` report lists besides the scenario's (a mid-sized suite).
PASSING_CASES = 150
KINDS = ("mixed", "all_base", "retry", "main_flip", "target", "new", "added", "unseen", "parallel")
VERDICTS = ("pre-existing", "flaky", "new", "unclassified")


@dataclass
class CaseMR:
    """One MR: its failed jobs' cases in the analysed pipeline and the truth of each case and job."""

    repo: str
    kind: str
    log: str
    cases: dict[str, str] = field(default_factory=dict)
    """Case name -> true verdict."""
    jobs: dict[str, str] = field(default_factory=dict)
    """Job name -> true verdict."""


def _passing(repo: str) -> tuple[Case, ...]:
    return tuple(Case(f"test_ok_{n:03d}", "success", classname=_cls(repo), stack_trace=None) for n in
                 range(PASSING_CASES))


def _cls(repo: str) -> str:
    return "tests." + repo.rsplit("/", 1)[-1].replace("-", "_").replace(".", "_")


def _case(repo: str, name: str, status: str = "failed", kind: str = "") -> Case:
    """A scenario's case, named after its kind: the MRs of one repository share `main`, and one kind's failures
    there must not be another kind's evidence."""
    return Case(name.replace("test_", f"test_{kind}_", 1) if kind else name, status, classname=_cls(repo))


def _report(repo: str, kind: str, failing: tuple[str, ...], passing: tuple[str, ...] = ()) -> tuple[Case, ...]:
    return (*(_case(repo, n, kind=kind) for n in failing), *(_case(repo, n, "success", kind) for n in passing),
            *_passing(repo))


class _Seeder:
    """The pipelines of one MR of a kind (merge base, `main`, the commit's) in the fake GitLab."""

    def __init__(self, world: CiWorld, iid: int, mr: CaseMR) -> None:
        self.world, self.iid, self.mr, self.repo = world, iid, mr, mr.repo
        self.base, self.sha = sha_of(mr.repo, "cbase", iid), sha_of(mr.repo, "cmr", iid)

    def pipe(self, sha: str, job: str, failing: tuple[str, ...], passing: tuple[str, ...] = (),
             **kw: Any) -> int:
        status = "failed" if failing else "success"
        return self.world.pipeline(sha, [Attempt(job, status, trace=self.mr.log if failing else "ok\n",
                                                 cases=_report(self.repo, self.mr.kind, failing, passing))], **kw)

    def analysed(self, jobs: dict[str, tuple[str, ...]], **kw: Any) -> int:
        attempts = [Attempt(job, trace=self.mr.log, cases=tuple(_case(self.repo, n, kind=self.mr.kind) for n in names))
                    for job, names in jobs.items()]
        return self.world.pipeline(self.sha, attempts, ref="feature", source="merge_request_event", **kw)

    def seed(self) -> int:
        self.world.mr(self.iid, base_sha=self.base, sha=self.sha)
        return cast(int, getattr(self, f"_{self.mr.kind}")())

    def _mixed(self) -> int:
        self.pipe(self.base, "unit", ("test_a", "test_b"), ("test_c",))
        return self.analysed({"unit": ("test_a", "test_b", "test_c")})

    def _all_base(self) -> int:
        self.pipe(self.base, "unit", ("test_a", "test_b"))
        return self.analysed({"unit": ("test_a", "test_b")})

    def _retry(self) -> int:
        self.pipe(self.base, "unit", ("test_b",), ("test_a",))
        self.pipe(self.sha, "unit", ("test_b",), ("test_a",), ref="feature")
        return self.analysed({"unit": ("test_a", "test_b")})

    def _main_flip(self) -> int:
        self.pipe(self.base, "unit", (), ("test_a",))
        flipped = sha_of(self.repo, "flip", self.iid)
        self.pipe(flipped, "unit", ("test_a",))
        self.pipe(flipped, "unit", (), ("test_a",))
        return self.analysed({"unit": ("test_a",)})

    def _target(self) -> int:
        self.pipe(sha_of(self.repo, "later", self.iid), "unit", ("test_a",))
        return self.analysed({"unit": ("test_a",)})

    def _new(self) -> int:
        self.pipe(self.base, "unit", (), ("test_a", "test_b"))
        return self.analysed({"unit": ("test_a", "test_b")})

    def _added(self) -> int:
        self.pipe(self.base, "unit", ())
        return self.analysed({"unit": ("test_added",)})

    def _unseen(self) -> int:
        self.pipe(self.base, "unit", ())
        return self.analysed({"integration": ("test_a",)})

    def _parallel(self) -> int:
        self.world.pipeline(self.base, [
            Attempt("unit 1/2", trace=self.mr.log, cases=_report(self.repo, "parallel", ("test_a",))),
            Attempt("unit 2/2", "success", trace="ok\n", cases=(_case(self.repo, "test_b", "success", "parallel"),))])
        return self.analysed({"unit 1/2": ("test_a",), "unit 2/2": ("test_b",)})


_TRUTH: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "mixed": ({"test_a": "pre-existing", "test_b": "pre-existing", "test_c": "new"}, {"unit": "new"}),
    "all_base": ({"test_a": "pre-existing", "test_b": "pre-existing"}, {"unit": "pre-existing"}),
    "retry": ({"test_a": "flaky", "test_b": "pre-existing"}, {"unit": "pre-existing"}),
    "main_flip": ({"test_a": "flaky"}, {"unit": "flaky"}),
    "target": ({"test_a": "pre-existing"}, {"unit": "pre-existing"}),
    "new": ({"test_a": "new", "test_b": "new"}, {"unit": "new"}),
    "added": ({"test_added": "new"}, {"unit": "new"}),
    "unseen": ({"test_a": "unclassified"}, {"integration": "unclassified"}),
    "parallel": ({"test_a": "pre-existing", "test_b": "new"}, {"unit 1/2": "pre-existing", "unit 2/2": "new"}),
}


def case_mrs(repos: dict[str, str]) -> list[CaseMR]:
    """Every kind for each repository (repository -> one of its failing logs)."""
    return [CaseMR(repo, kind, log, dict(_TRUTH[kind][0]), dict(_TRUTH[kind][1]))
            for repo, log in sorted(repos.items()) for kind in KINDS]


async def run_cases(mrs: list[CaseMR], limits: TriageLimits | None = None) -> list[tuple[CaseMR, Triage]]:
    return await triage_all(mrs, lambda world, iid, mr: _Seeder(world, iid, mr).seed(), limits)


def _pairs(results: list[tuple[CaseMR, Triage]]) -> Iterator[tuple[str, str, str, str]]:
    """(level, kind, truth, said) per case (under each job that lists it) and per job."""
    for mr, found in results:
        checks = {c.name: c for c in found.checks}
        for job, truth in mr.jobs.items():
            check = checks.get(job)
            yield "job", mr.kind, truth, check.verdict.value if check else "missing"
            cases = check.cases if check else ()
            said = {c.name.replace(f"test_{mr.kind}_", "test_", 1): c.verdict.value for c in cases}
            for name in said.keys() & mr.cases.keys():
                yield "case", mr.kind, mr.cases[name], said[name]


def _scores(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(pairs), "accuracy": ratio(sum(t == s for t, s in pairs), len(pairs))}
    for verdict in VERDICTS:
        said = sum(s == verdict for _, s in pairs)
        true = sum(t == verdict for t, _ in pairs)
        hits = sum(t == s == verdict for t, s in pairs)
        out[verdict] = {"precision": ratio(hits, said), "recall": ratio(hits, true), "said": said, "true": true}
    return out


def case_figures(results: list[tuple[CaseMR, Triage]]) -> dict[str, Any]:
    rows = list(_pairs(results))
    green = [mr for mr, found in results if found.status == "success"]
    false_green = [f"{mr.repo} {mr.kind}" for mr in green if any(t not in {v.value for v in NOT_YOURS}
                                                                 for t in (*mr.cases.values(), *mr.jobs.values()))]
    n = max(len(results), 1)
    return {"mrs": len(results), "per_case": _scores([(t, s) for lvl, _, t, s in rows if lvl == "case"]),
            "per_job": _scores([(t, s) for lvl, _, t, s in rows if lvl == "job"]),
            "by_kind": {k: f"{sum(t == s for _, kk, t, s in rows if kk == k)}/{sum(kk == k for _, kk, _, _ in rows)}"
                        for k in KINDS},
            "false_green": len(false_green), "false_green_mrs": false_green[:10], "green_mrs": len(green),
            "rows_with_history": sum(bool(c.history) for _, f in results for ch in f.checks for c in ch.cases),
            "calls_per_mr_mean": round(sum(f.calls for _, f in results) / n, 2),
            "calls_per_mr_max": max((f.calls for _, f in results), default=0),
            "report_bytes_per_mr_mean": round(sum(f.report_bytes for _, f in results) / n),
            "report_bytes_per_mr_max": max((f.report_bytes for _, f in results), default=0),
            "log_bytes_per_mr_mean": round(sum(f.log_bytes for _, f in results) / n)}
