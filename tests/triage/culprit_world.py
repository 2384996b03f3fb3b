"""Target-branch histories for the culprit search: one merged MR per commit of `main`, a pipeline per merge commit
(or skipping some), the job passing until the break and failing the same way after it."""

from __future__ import annotations

from collections.abc import Iterable

from tests.triage.conftest import failing_log
from tests.triage.world import Attempt, CiWorld, sha_of

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
