"""Target-branch histories for the culprit search: one merged MR per commit of `main`, a pipeline per merge commit
(or skipping some), the job passing until the break and failing the same way after it."""

from __future__ import annotations

from collections.abc import Iterable

from tests.triage.conftest import failing_log
from tests.triage.world import Attempt, Case, CiWorld, sha_of

PARSE = "AssertionError: parse('1.2') returned None"
PASSING = "$ pytest -q\n" + "\n".join(f"tests/test_{n}.py ...." for n in range(40)) + "\n160 passed in 3.2s\n"
AUTHORS = {50: "bob", 51: "alice", 52: "carol"}


def authors(world: CiWorld) -> None:
    for uid, name in AUTHORS.items():
        world.gl.add_user(uid, name, name=name.title())


def history(world: CiWorld, count: int, broken_at: int, *, skip: Iterable[int] = (), first_iid: int = 100,
            job: str = "unit-tests", other: Iterable[int] = ()) -> list[str]:
    """`count` merged MRs into the branch (the n-th is !first_iid+n-1, by one of AUTHORS), a pipeline on each merge
    commit except the `skip`ped ones (1-based); the job fails the same way from the `broken_at`-th on, and with
    another failure at the `other` ones. Returns the merge commits, oldest first."""
    merges, skipped = [], set(skip)
    for n in range(1, count + 1):
        iid = first_iid + n - 1
        world.merged(iid, [sha_of(world.path, "c", iid)], author_id=50 + n % 3)
        merge = sha_of(world.path, "merge", iid)
        merges.append(merge)
        if n in skipped:
            continue
        broken = n >= broken_at
        trace = failing_log("test_parse", PARSE, run=n) if broken else PASSING
        if n in set(other):
            broken, trace = True, failing_log("test_load", "KeyError: 'settings'", run=n)
        world.pipeline(merge, [Attempt(job, "failed" if broken else "success", trace=trace),
                               Attempt("lint", "success", trace="ok\n")])
    return merges


def blocked_mr(world: CiWorld, iid: int, base: str, job: str = "unit-tests", run: int = 99) -> int:
    """An MR on `base` whose pipeline fails the job as the branch does; returns its pipeline's id."""
    mr = world.mr(iid, base_sha=base, sha=sha_of(world.path, "mr", iid, base))
    return world.pipeline(mr["sha"], [Attempt(job, trace=failing_log("test_parse", PARSE, run=run))], ref="feature",
                          source="merge_request_event")


CASES = ("test_a", "test_b", "test_c")


def cases_log(failed: Iterable[str], run: int = 1) -> str:
    """A pytest log that fails these of CASES, each as its junit case's trace says (`world.Case`'s default)."""
    failed = list(failed)
    blocks = [line for name in failed for line in (f"___ {name} ___", f"E       AssertionError: {name} failed",
                                                   "tests/test_core.py:42: AssertionError")]
    return "\n".join([f"Running with gitlab-runner 17.{run}.0", "$ pytest -q", "=== FAILURES ===", *blocks,
                      "=== short test summary info ===",
                      *(f"FAILED tests/test_core.py::{n} - AssertionError: {n} failed" for n in failed),
                      f"{len(failed)} failed, {100 - len(failed)} passed in {run}.5s",
                      "ERROR: Job failed: exit code 1"])


def cases_attempt(failed: Iterable[str], job: str = "unit-tests", run: int = 1,
                  cases: Iterable[str] = CASES) -> Attempt:
    """The job with a junit report of `cases`, these failed (a pass when none is)."""
    failed = tuple(failed)
    report = tuple(Case(n, "failed" if n in failed else "success") for n in cases)
    trace = cases_log(failed, run) if failed else PASSING
    return Attempt(job, "failed" if failed else "success", trace=trace, cases=report)


def case_history(world: CiWorld, count: int, breaks: dict[str, int], *, first_iid: int = 100,
                 added: dict[str, int] | None = None) -> list[str]:
    """`count` merged MRs into the branch as `history` makes them, a pipeline on each merge commit whose job
    reports CASES (each of `added` only from its merge on), each of `breaks` failing from its (1-based) merge on.
    Returns the merge commits, oldest first."""
    merges = []
    for n in range(1, count + 1):
        iid = first_iid + n - 1
        world.merged(iid, [sha_of(world.path, "c", iid)], author_id=50 + n % 3)
        merges.append(sha_of(world.path, "merge", iid))
        failed = [name for name, at in breaks.items() if n >= at]
        cases = [name for name in CASES if n >= (added or {}).get(name, 1)]
        world.pipeline(merges[-1], [cases_attempt(failed, run=n, cases=cases),
                                    Attempt("lint", "success", trace="ok\n")])
    return merges


def cases_mr(world: CiWorld, iid: int, base: str, failed: Iterable[str], run: int = 99,
             cases: Iterable[str] = CASES) -> int:
    """An MR on `base` whose pipeline fails these of the job's `cases`; returns its pipeline's id."""
    mr = world.mr(iid, base_sha=base, sha=sha_of(world.path, "mr", iid, base))
    return world.pipeline(mr["sha"], [cases_attempt(failed, run=run, cases=cases)], ref="feature",
                          source="merge_request_event")
