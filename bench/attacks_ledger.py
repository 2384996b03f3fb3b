"""Attack families on the ledger of checks (bench/triage.py): what must be listed and proven before a `success`. (c)
parallel shards sharing one report suite; (d) test jobs skipped after an earlier stage's pre-existing failure, or
canceled; (e) failed external statuses that look like GitLab jobs; (f) a failed job of a child pipeline."""

from __future__ import annotations

from bench.attack_model import Attack, Child, LogPool, failed, passing
from bench.triage_world import before_failure
from bench.triage_world import passing as passing_log
from tests.triage.world import Attempt, Case

# How a test process dies without writing its junit report (the shard's whole ending).
CRASH = ("Fatal Python error: Segmentation fault", "", "Current thread 0x00007f3a2c1ff740 (most recent call first):",
         '  File "/builds/app/src/native/bridge.py", line 88 in decode', "ERROR: Job failed: exit code 139")
# External statuses: another project's job (a downstream check reporting back) and another CI named like a job.
OTHER_PROJECT_JOB = "{web}/other-group/scanner/-/jobs/98765"
OTHER_CI = "https://ci.example.org/job/app/4411/console"
# What a runner prints when its machine fails under the job (failure_reason runner_system_failure).
RUNNER_FAILURE = ("ERROR: Job failed (system failure): Error response from daemon: container create: no space left "
                  "on device")
COMPANIONS = ("pre-existing", "infrastructure")


def _case(name: str, status: str = "failed") -> Case:
    return Case(name, status, classname="tests.test_suite", stack_trace=None if status == "success" else
                f"AssertionError: {name} failed")


def shards(pool: LogPool) -> list[Attack]:
    """(c) `unit 1/2` fails a case also failing on the base; `unit 2/2` passed on the base and now crashes before
    its report is written. GitLab files both shards' cases under the suite `unit`. Truth: 1/2 pre-existing, 2/2
    new."""
    out = []
    for k in range(len(pool.repos)):
        crash = before_failure(pool.row(k + 1), pool.log(k + 1)) + "\n".join(CRASH) + "\n"
        out.append(Attack("c", "shard crash", pool.project("c", "shard", k),
                          {"unit 1/2": "pre-existing", "unit 2/2": "new"},
                          mr=(failed("unit 1/2", pool.other_run(k), cases=(_case("test_a"),)),
                              failed("unit 2/2", crash)),
                          base=(failed("unit 1/2", pool.log(k), cases=(_case("test_a"),)),
                                passing("unit 2/2", cases=(_case("test_b", "success"),))),
                          logs=(str(pool.row(k)["log_id"]), str(pool.row(k + 1)["log_id"]))))
    return out


def companion(pool: LogPool, k: int, job: str, stage: str, kind: str) -> tuple[Attempt, Attempt, str]:
    """The failure beside the attacked checks, which alone would let the MR pass: (MR's attempt, base's, truth).
    `pre-existing`: it failed the same way on the base; `infrastructure`: GitLab blames the runner, on the base's
    run of the job too (no log comparison needed, so the attack bites whatever that comparison makes of the runner's
    sections; a runner failure the base did not have could be the MR's)."""
    if kind == "pre-existing":
        return (failed(job, pool.other_run(k), stage=stage), failed(job, pool.log(k), stage=stage), kind)
    mine, theirs = (before_failure(pool.row(n), pool.log(n)) + RUNNER_FAILURE + "\n" for n in (k, k + 1))
    return (failed(job, mine, stage=stage, failure_reason="runner_system_failure"),
            failed(job, theirs, stage=stage, failure_reason="runner_system_failure"), kind)


def not_run(pool: LogPool) -> list[Attack]:
    """(d) An earlier stage fails (as on the base, or by the runner's fault) and the test stage is skipped (the MR's
    tests never ran); or the tests are canceled beside such a failure. Truth: the tests unclassified."""
    out = []
    for k in range(len(pool.repos)):
        for beside in COMPANIONS:
            mine, theirs, truth = companion(pool, k, "build", "build", beside)
            tests = (Attempt("unit", "skipped", stage="test"), Attempt("integration", "skipped", stage="test"))
            out.append(Attack("d", f"skipped, earlier {beside} failure", pool.project("d", f"skipped-{beside}", k),
                              {"build": truth, "unit": "unclassified", "integration": "unclassified"},
                              mr=(mine, *tests), base=(theirs, *tests), logs=(str(pool.row(k)["log_id"]),)))
            mine, theirs, truth = companion(pool, k, "lint", "test", beside)
            partial = before_failure(pool.row(k + 1), pool.log(k + 1))
            out.append(Attack("d", f"canceled, beside {beside} failure", pool.project("d", f"canceled-{beside}", k),
                              {"lint": truth, "unit": "unclassified"},
                              mr=(mine, Attempt("unit", "canceled", trace=partial)), base=(theirs, passing("unit")),
                              logs=(str(pool.row(k)["log_id"]),)))
    return out


def external(pool: LogPool) -> list[Attack]:
    """(e) A failed external status whose target is another project's job, and one named like a job of the
    pipeline (which passed), beside a failure that is not the MR's. Truth: each status unclassified (its log is not
    this pipeline's to compare)."""
    out = []
    for k in range(len(pool.repos)):
        for beside in COMPANIONS:
            mine, theirs, truth = companion(pool, k, "test", "test", beside)
            out.append(Attack("e", f"another project's job, beside {beside} failure",
                              pool.project("e", f"other-project-{beside}", k),
                              {"test": truth, "security-scan": "unclassified"}, mr=(mine,), base=(theirs,),
                              statuses=({"name": "security-scan", "status": "failed",
                                         "target_url": OTHER_PROJECT_JOB},), logs=(str(pool.row(k)["log_id"]),)))
            mine, theirs, truth = companion(pool, k, "lint", "test", beside)
            out.append(Attack("e", f"named like a job, beside {beside} failure",
                              pool.project("e", f"job-name-{beside}", k), {"lint": truth, "unit": "unclassified"},
                              mr=(mine, passing("unit")), base=(theirs, passing("unit")),
                              statuses=({"name": "unit", "status": "failed", "target_url": OTHER_CI},),
                              logs=(str(pool.row(k)["log_id"]),)))
    return out


def child_pipelines(pool: LogPool) -> list[Attack]:
    """(f) A trigger job whose child pipeline's `unit` fails anew (it passes in the base's child pipeline), beside a
    parent's failure that is not the MR's. Truth: the trigger job new."""
    out = []
    for k in range(len(pool.repos)):
        for beside in COMPANIONS:
            mine, theirs, truth = companion(pool, k, "lint", "test", beside)
            child = Child("child-tests", mr=(failed("unit", pool.log(k + 1)),),
                          base=(passing("unit", passing_log(pool.row(k + 1), pool.log(k + 1))),))
            out.append(Attack("f", f"child pipeline fails, beside {beside} failure",
                              pool.project("f", f"child-{beside}", k), {"lint": truth, "child-tests": "new"},
                              mr=(mine,), base=(theirs,), children=(child,),
                              logs=(str(pool.row(k)["log_id"]), str(pool.row(k + 1)["log_id"]))))
    return out
