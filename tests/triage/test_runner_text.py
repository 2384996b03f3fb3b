"""GitLab Runner's own text never decides: the same lint output on the MR and the base, run by another runner on
another ref and commit (each failed before the runner's lines were skipped), is pre-existing; one problem more is
new."""

from __future__ import annotations

from pathlib import Path

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.triage.excerpt import evidence_of
from hummingbird_agent.triage.model import Verdict
from tests.triage.conftest import run_triage
from tests.triage.gitlab_log import BRANCH, MAIN, job_log
from tests.triage.real_tools import recorded
from tests.triage.world import Attempt, CiWorld, sha_of

BASE = sha_of("base")
RECORD = recorded()
COMMANDS = {"mypy": "mypy --strict app.py", "ruff": "ruff check app.py"}


async def _verdict(world: CiWorld, tool: str, base_output: str, mr_output: str) -> tuple[Verdict, bool]:
    world.pipeline(BASE, [Attempt("lint", trace=job_log(COMMANDS[tool], base_output, MAIN))])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt("lint", trace=job_log(COMMANDS[tool], mr_output, BRANCH))],
                   ref=BRANCH.ref, source="merge_request_event")
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    return check.verdict, found.all_not_yours


@pytest.mark.parametrize("tool", sorted(COMMANDS))
async def test_the_same_short_lint_output_under_another_runner_ref_and_commit_is_pre_existing(
        world: CiWorld, tool: str) -> None:
    output = RECORD[tool, "base"]
    assert await _verdict(world, tool, output, output) == (Verdict.PRE_EXISTING, True)


@pytest.mark.parametrize("tool", sorted(COMMANDS))
async def test_one_problem_more_under_another_runner_is_new(world: CiWorld, tool: str) -> None:
    assert await _verdict(world, tool, RECORD[tool, "base"], RECORD[tool, "added"]) == (Verdict.NEW, False)


async def test_a_generic_failure_printed_the_same_way_under_another_runner_is_pre_existing(world: CiWorld) -> None:
    # No failure line names the cause: only the whole log, the runner's text aside, can show it is the same.
    output = "\n".join([f"step {n}: compiled module_{n}" for n in range(40)] + ["something went wrong"])
    world.pipeline(BASE, [Attempt("build", trace=job_log("./ci.sh", output, MAIN))])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt("build", trace=job_log("./ci.sh", output, BRANCH))], ref=BRANCH.ref,
                   source="merge_request_event")
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict == Verdict.PRE_EXISTING


@pytest.mark.parametrize("tool", sorted(COMMANDS))
def test_a_short_lint_log_is_compared_by_its_fingerprint_not_by_the_whole_log(tool: str, tmp_path: Path) -> None:
    (tmp_path / "job.log").write_text(job_log(COMMANDS[tool], RECORD[tool, "base"], BRANCH))
    found = evidence_of(tmp_path / "job.log", None)
    assert not found.fingerprint.generic and found.digest_lines < budgets.TRIAGE_SAME_LOG_MIN_LINES


def test_the_runner_s_failure_line_is_still_reported_for_an_infrastructure_failure(tmp_path: Path) -> None:
    (tmp_path / "job.log").write_text(job_log("./ci.sh", "building", BRANCH))
    assert evidence_of(tmp_path / "job.log", None).runner_line == "ERROR: Job failed: exit code 1"
