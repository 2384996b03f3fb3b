"""Attack families on history and metadata (bench/triage.py): (g) a job retried after the verdict that then fails
with a new failure; (h) a failure fixed on the target branch and broken again by the MR; (i) GitLab's platform
failure reasons an MR can cause; (j) flaky claims from runs that are not this failure's."""

from __future__ import annotations

from bench.attack_model import Attack, LogPool, Pipe, failed, passing, planted
from bench.attacks_ledger import COMPANIONS, companion
from bench.runner_formats import failure
from bench.triage_world import before_failure
from bench.triage_world import passing as passing_log
from tests.triage.world import Case

# The MR's change to the CI configuration (a new image, a runner tag no runner has): what can make a platform fail.
CI_DIFF = {"old_path": ".gitlab-ci.yml", "new_path": ".gitlab-ci.yml", "a_mode": "100644", "b_mode": "100644",
           "new_file": False, "renamed_file": False, "deleted_file": False,
           "diff": "@@ -1,6 +1,7 @@\n-image: python:3.12-slim\n+image: python:3.99-slim\n test:\n   stage: test\n"
                   "+  tags: [gpu-large]\n   script:\n     - ./ci/run.sh\n"}
# (failure_reason, how the MR's log ends): platform reasons a change can cause, and an out-of-memory kill.
PLATFORM = (
    ("trace_size_exceeded", ("Job's log exceeded limit of 4194304 bytes.",
                             "Job execution will continue but no more output will be collected.")),
    ("job_execution_timeout", ("ERROR: Job failed: execution took longer than 1h0m0s seconds",)),
    ("stuck_or_timeout_failure", ()),
    ("runner_system_failure", ("ERROR: Job failed (system failure): Error response from daemon: manifest for "
                               "python:3.99-slim not found: manifest unknown",)),
    ("script_failure", ("Killed", "ERROR: Job failed: exit code 137")),
)
# Lines a test printing too much writes before the log limit (trace_size_exceeded).
SPAM_LINES = 400


def _platform_log(pool: LogPool, k: int, reason: str, ending: tuple[str, ...]) -> str:
    """What the job printed before the platform stopped it: nothing when it never started (stuck)."""
    if reason == "stuck_or_timeout_failure":
        return ""
    head = before_failure(pool.row(k), pool.log(k))
    spam = [f"DEBUG cache miss for key item-{n}" for n in range(SPAM_LINES)] if reason == "trace_size_exceeded" else []
    return head + "\n".join([*spam, *ending]) + "\n"


def retry_after_verdict(pool: LogPool) -> list[Attack]:
    """(g) The first pipeline event's triage sees a failure that is not the MR's (the base's, or the runner's fault);
    the job is then retried in the same pipeline and fails with a new failure, and the next event triages again
    (the service's cache kept). Truth of the second triage: new."""
    out = []
    for k in range(len(pool.repos)):
        again = planted(pool.other_run(k), failure("pytest" if k % 2 else "go", 200 + k), "late")
        for first in COMPANIONS:
            mine, theirs, _ = companion(pool, k, "test", "test", first)
            out.append(Attack("g", f"retried after {first}, new failure", pool.project("g", f"retry-{first}", k),
                              {"test": "new"}, mr=(mine,), base=(theirs,), retry=(failed("test", again),),
                              logs=(str(pool.row(k)["log_id"]),)))
    return out


def fixed_then_broken(pool: LogPool) -> list[Attack]:
    """(h) An older target-branch pipeline failed the job as the MR does; the merge base, newer, passes it (it was
    fixed); the MR breaks it again. Truth: new."""
    out = []
    for k in range(len(pool.repos)):
        row, log = pool.row(k), pool.log(k)
        out.append(Attack("h", "fixed on the base, broken again", pool.project("h", "rebreak", k), {"test": "new"},
                          mr=(failed("test", pool.other_run(k)),), base=(passing("test", passing_log(row, log)),),
                          history=(Pipe((failed("test", log),), commit="older"),), logs=(str(row["log_id"]),)))
    return out


def platform_reasons(pool: LogPool, per_reason: int = 4) -> list[Attack]:
    """(i) A platform failure reason (or an out-of-memory kill) on an MR that changes the CI configuration: new when
    the base passes the job; infrastructure when the base failed the same way."""
    out = []
    for r, (reason, ending) in enumerate(PLATFORM):
        for n in range(per_reason):
            k = r * per_reason + n
            mine = _platform_log(pool, k, reason, ending)
            ok = passing("test", passing_log(pool.row(k), pool.log(k)))
            same = failed("test", _platform_log(pool, k, reason, ending), failure_reason=reason)
            for kind, base, truth in (("base passes", ok, "new"), ("base failed the same way", same, "infrastructure")):
                out.append(Attack("i", f"{reason}, {kind}", pool.project("i", f"{reason}-{kind}", k), {"test": truth},
                                  mr=(failed("test", mine, failure_reason=reason),), base=(base,), diffs=(CI_DIFF,),
                                  logs=(str(pool.row(k)["log_id"]),)))
    return out


def _unit(status: str, stack: str | None) -> tuple[Case, ...]:
    return (Case("test_checkout_total", status, classname="tests.test_cart", stack_trace=stack),
            *(Case(f"test_ok_{n:02d}", "success", classname="tests.test_cart", stack_trace=None) for n in range(8)))


def flaky_claims(pool: LogPool) -> list[Attack]:
    """(j) A case that failed and passed on one target-branch commit with another message, now failing with its own
    (the base passes it); a job that failed otherwise and passed on retry there; a passing job of the same name in
    an unrelated pipeline of the commit (a scheduled docs build). Truth: new."""
    out = []
    for k in range(len(pool.repos)):
        row, log = pool.row(k), pool.log(k)
        ok, other = passing_log(row, log), pool.log(k + 1)
        flip = (Pipe((failed("unit", other, cases=_unit("failed", "TimeoutError: timed out after 30s")),),
                     commit="flip"), Pipe((passing("unit", ok, cases=_unit("success", None)),), commit="flip"))
        out.append(Attack("j", "case flipped with another message", pool.project("j", "case-flip", k),
                          {"unit": "new"}, history=flip, base=(passing("unit", ok, cases=_unit("success", None)),),
                          mr=(failed("unit", log, cases=_unit("failed", "AssertionError: assert 3 == 4")),),
                          logs=(str(row["log_id"]), str(pool.row(k + 1)["log_id"]))))
        retried = Pipe((failed("test", other), passing("test", ok)), commit="flip")
        out.append(Attack("j", "job flipped with another failure", pool.project("j", "job-flip", k),
                          {"test": "new"}, history=(retried,), base=(passing("test", ok),),
                          mr=(failed("test", log),), logs=(str(row["log_id"]), str(pool.row(k + 1)["log_id"]))))
        docs = Pipe((passing("build", "$ mkdocs build --strict\nINFO - Documentation built in 2.31 seconds\n",
                             stage="docs"),), ref="feature", source="schedule")
        out.append(Attack("j", "same name in an unrelated pipeline", pool.project("j", "unrelated", k),
                          {"build": "new"}, same_sha=(docs,), base=(passing("build", ok, stage="build"),),
                          mr=(failed("build", log, stage="build"),), logs=(str(row["log_id"]),)))
    return out
