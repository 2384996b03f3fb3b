"""Success only on proof: every check of the commit is in the ledger (jobs of every current pipeline, child
pipelines, skipped and canceled jobs, external statuses), each non-pass proven someone else's on the nearest
evidence, all of its evidence read. Each test is one path by which `success` was once reached without proof."""

from __future__ import annotations

from hummingbird_agent.triage.model import Verdict
from hummingbird_agent.triage.render import headline
from tests.triage.conftest import failing_log, run_triage
from tests.triage.world import Attempt, Case, CiWorld, sha_of

BASE = sha_of("base")
PARSE = "AssertionError: parse('1.2') returned None"
MYPY = 'src/app.py:3: error: Incompatible return value type (got "int", expected "str")  [return-value]'


def _mr(world: CiWorld, *attempts: Attempt, iid: int = 1) -> tuple[str, int]:
    mr = world.mr(iid, base_sha=BASE)
    return mr["sha"], world.pipeline(mr["sha"], attempts, ref="feature", source="merge_request_event")


def _with_mypy(log: str) -> str:
    """The log with a type error printed before the test run's failure (a `mypy` step of the same job)."""
    head, tail = log.split("$ pytest -q", 1)
    return f"{head}$ mypy src\n{MYPY}\nFound 1 error in 1 file (checked 3 source files)\n$ pytest -q{tail}"


async def test_a_test_report_adds_to_the_log_and_never_replaces_it(world: CiWorld) -> None:
    """Path 1: `unit` fails `test_a` (failing on the base too) and its log prints a new mypy error."""
    world.pipeline(BASE, [Attempt("unit", trace=failing_log("test_a", PARSE, run=7), cases=(Case("test_a"),))])
    _mr(world, Attempt("unit", trace=_with_mypy(failing_log("test_a", PARSE, run=2)), cases=(Case("test_a"),)))
    found, reader = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.NEW and "do not account for" in check.reason and "return-value" in check.reason
    assert reader.log_bytes > 0 and found.status == "failed"


async def test_a_report_and_a_log_both_on_the_base_are_pre_existing(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit", trace=_with_mypy(failing_log("test_a", PARSE, run=7)),
                                  cases=(Case("test_a"),))])
    _mr(world, Attempt("unit", trace=_with_mypy(failing_log("test_a", PARSE, run=2)), cases=(Case("test_a"),)))
    found, _ = await run_triage(world.gl, 1)
    assert [c.verdict for c in found.checks] == [Verdict.PRE_EXISTING] and found.status == "success"


async def test_a_report_whose_job_log_was_not_read_proves_nothing(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit", trace=failing_log("test_a", PARSE, run=7), cases=(Case("test_a"),))])
    _mr(world, Attempt("unit", trace=None, cases=(Case("test_a"),)))
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    assert check.verdict == Verdict.UNCLASSIFIED and "log was not examined" in check.reason
    assert found.status == "failed"


async def test_a_pass_on_the_merge_base_outweighs_an_older_failure_on_main(world: CiWorld) -> None:
    """Path 3: fixed on `main` (the base passes), broken again by the MR: new, whatever older pipelines did."""
    world.pipeline(sha_of("main", 1), [Attempt("unit", trace=failing_log("test_a", PARSE, run=5),
                                               cases=(Case("test_a"),))], updated_at="2026-01-05T01:00:00.000Z")
    world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n", cases=(Case("test_a", "success"),)),
                          Attempt("lint", "success", trace="ok\n")], updated_at="2026-01-05T02:00:00.000Z")
    _mr(world, Attempt("unit", trace=failing_log("test_a", PARSE, run=2), cases=(Case("test_a"),)),
        Attempt("lint", trace=failing_log("test_lint", PARSE, run=3)))
    world.pipeline(sha_of("main", 2), [Attempt("lint", trace=failing_log("test_lint", PARSE, run=4))],
                   updated_at="2026-01-05T03:00:00.000Z")
    found, _ = await run_triage(world.gl, 1)
    verdicts = {c.name: (c.verdict, c.reason) for c in found.checks}
    assert verdicts["unit"][0] == Verdict.NEW  # by its test report
    assert verdicts["lint"] == (Verdict.NEW, "passes on the merge base's pipeline")  # by its log
    assert found.status == "failed"


async def test_skipped_tests_after_a_pre_existing_build_failure_prove_nothing(world: CiWorld) -> None:
    """Path 5: the build fails as on the base, so the MR's tests never ran."""
    build = failing_log("test_build", "CompileError: vendor/lib.c missing", run=1)
    world.pipeline(BASE, [Attempt("build", trace=build, stage="build"),
                          Attempt("unit", "skipped", trace=None)])
    _mr(world, Attempt("build", trace=build.replace("17.1.0", "17.2.0"), stage="build"),
        Attempt("unit", "skipped", trace=None), Attempt("e2e", "canceled", trace=None))
    found, _ = await run_triage(world.gl, 1)
    verdicts = {c.name: (c.verdict, c.reason) for c in found.checks}
    assert verdicts["build"][0] == Verdict.PRE_EXISTING
    assert verdicts["unit"][0] == Verdict.UNCLASSIFIED and verdicts["unit"][1].startswith("skipped")
    assert verdicts["e2e"][0] == Verdict.UNCLASSIFIED and verdicts["e2e"][1].startswith("canceled")
    assert found.status == "failed"


async def test_a_job_still_running_keeps_the_status_pending(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit", trace=failing_log("test_a", PARSE, run=7))])
    _mr(world, Attempt("unit", trace=failing_log("test_a", PARSE, run=2)), Attempt("e2e", "running", trace=""))
    found, _ = await run_triage(world.gl, 1)
    assert [c.verdict for c in found.checks] == [Verdict.PRE_EXISTING]
    assert "job e2e" in found.running and found.status == "pending"
    assert "Still running: job e2e" in headline(found)


async def test_external_statuses_are_checks_whatever_their_name_or_link(world: CiWorld) -> None:
    """Path 5: a failed status linking another project's job, and one named like a job of the pipeline."""
    world.pipeline(BASE, [Attempt("unit", trace=failing_log("test_a", PARSE, run=7))])
    sha, _ = _mr(world, Attempt("unit", trace=failing_log("test_a", PARSE, run=2)))
    world.gl.add_commit_status(1, sha, "security/scan", "failed",
                               target_url="https://gitlab.example.com/other/scanner/-/jobs/77")
    world.gl.add_commit_status(1, sha, "unit", "failed", target_url="https://ci.example.com/builds/9")
    found, _ = await run_triage(world.gl, 1)
    rows = {(c.name, c.verdict) for c in found.checks}
    assert rows == {("unit", Verdict.PRE_EXISTING), ("security/scan", Verdict.UNCLASSIFIED),
                    ("unit", Verdict.UNCLASSIFIED)}
    assert found.status == "failed"


async def test_a_failed_job_of_a_child_pipeline_is_a_check(world: CiWorld) -> None:
    """Path 5: the MR's child pipeline (started by a trigger job) fails a job the base's child pipeline passes."""
    base = world.pipeline(BASE, [Attempt("unit", trace=failing_log("test_a", PARSE, run=7))])
    world.trigger(base, "deploy", [Attempt("deploy-check", "success", trace="ok\n")])
    _, pipeline = _mr(world, Attempt("unit", trace=failing_log("test_a", PARSE, run=2)))
    world.trigger(pipeline, "deploy", [Attempt("deploy-check", trace=failing_log("test_deploy", "KeyError: 'x'"))])
    found, _ = await run_triage(world.gl, 1, pipeline_id=pipeline)
    verdicts = {c.name: c.verdict for c in found.checks}
    assert verdicts == {"unit": Verdict.PRE_EXISTING, "deploy-check (child pipeline of deploy)": Verdict.NEW}
    assert found.status == "failed"


async def test_a_trigger_job_into_another_project_is_not_proven(world: CiWorld) -> None:
    other = CiWorld(world.gl, project_id=2, path="group/other", first_id=5000)
    world.pipeline(BASE, [Attempt("unit", trace=failing_log("test_a", PARSE, run=7))])
    _, pipeline = _mr(world, Attempt("unit", trace=failing_log("test_a", PARSE, run=2)))
    world.trigger(pipeline, "downstream-e2e", [Attempt("e2e", trace=failing_log("test_e2e", "TimeoutError: x"))],
                  downstream=other)
    found, _ = await run_triage(world.gl, 1, pipeline_id=pipeline)
    rows = {c.name: (c.verdict, c.reason) for c in found.checks}
    assert rows["downstream-e2e"][0] == Verdict.UNCLASSIFIED and "another project" in rows["downstream-e2e"][1]
    assert found.status == "failed"


async def test_a_reason_the_mr_can_cause_is_infrastructure_only_when_the_base_failed_so(world: CiWorld) -> None:
    """Path 6: the MR floods its log (`trace_size_exceeded`) while the base passes: not infrastructure."""
    flood = "$ make test\n" + "debug: value\n" * 50 + "ERROR: Job failed: trace size exceeded"
    world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n"),
                          Attempt("e2e", trace="ERROR: Job failed (system failure): pod evicted",
                                  failure_reason="runner_system_failure")])
    _mr(world, Attempt("unit", trace=flood, failure_reason="trace_size_exceeded"),
        Attempt("e2e", trace="ERROR: Job failed (system failure): pod evicted", failure_reason="runner_system_failure"),
        Attempt("docs", trace="ERROR: Job failed: the scheduler failed", failure_reason="scheduler_failure"),
        Attempt("package", trace="ERROR: Job failed: the artifacts of build expired",
                failure_reason="missing_dependency_failure"))  # the MR's `expire_in: 1 sec` on build
    found, _ = await run_triage(world.gl, 1)
    verdicts = {c.name: c.verdict for c in found.checks}
    assert verdicts == {"unit": Verdict.NEW, "e2e": Verdict.INFRASTRUCTURE, "docs": Verdict.INFRASTRUCTURE,
                        "package": Verdict.UNCLASSIFIED}  # the base never ran it: not infrastructure, unproven
    assert found.status == "failed"


async def test_a_runner_failure_on_a_job_the_base_never_ran_is_not_infrastructure(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n")])
    _mr(world, Attempt("image-build", trace="ERROR: Job failed (system failure): image pull failed",
                       failure_reason="runner_system_failure"))
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict == Verdict.UNCLASSIFIED


async def test_a_passing_pipeline_is_a_closed_ledger(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit", "success", trace="ok\n")])
    _mr(world, Attempt("unit", "success", trace="ok\n"), Attempt("lint", "success", trace="ok\n"),
        Attempt("docs", "manual", trace=None, allow_failure=True))
    found, _ = await run_triage(world.gl, 1)
    assert not found.checks and (found.passed, found.optional) == (2, 1) and found.status == "success"
