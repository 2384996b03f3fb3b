"""A failure the MR adds never hides among failures the merge base already has: every failing test and every
diagnostic of the MR's job must be reported on the base too (each failed before its fix)."""

from __future__ import annotations

from hummingbird_agent.triage.model import Verdict
from hummingbird_agent.triage.render import headline
from tests.triage.conftest import run_triage
from tests.triage.world import Attempt, CiWorld, sha_of

BASE = sha_of("base")
RUNNER = ["Running with gitlab-runner 17.2.0 (abc0002ef)", "Using Docker executor with image python:3.12 ..."]
EPILOGUE = ["Cleaning up project directory and file based variables", "ERROR: Job failed: exit code 1"]


def _pytest_log(*versions: str) -> str:
    """A pytest run in which `test_parse` fails for each of `versions` the same way."""
    lines = [*RUNNER, "$ pytest -q", "..F..F..F....", "=" * 30 + " FAILURES " + "=" * 30]
    for version in versions:
        lines += [f"{'_' * 20} test_parse[{version}] {'_' * 20}", "",
                  "    def test_parse(version):", ">       assert parse(version) is not None",
                  "E       AssertionError: assert None is not None",
                  "E        +  where None = parse('" + version + "')", "",
                  "tests/test_core.py:41: AssertionError"]
    lines.append("=" * 20 + " short test summary info " + "=" * 20)
    lines += [f"FAILED tests/test_core.py::test_parse[{v}] - AssertionError: assert None is not None"
              for v in versions]
    return "\n".join([*lines, f"{len(versions)} failed, 101 passed in 2.31s", *EPILOGUE])


def _mypy_log(functions: int) -> str:
    """mypy --strict on a module with `functions` unannotated functions (its output copied from a real run)."""
    lines = [*RUNNER, "$ mypy --strict app.py"]
    lines += [f"app.py:{1 + 4 * n}: error: Function is missing a type annotation  [no-untyped-def]"
              for n in range(functions)]
    return "\n".join([*lines, f"Found {functions} errors in 1 file (checked 1 source file)", *EPILOGUE])


async def _triage(world: CiWorld, job: str, base_log: str, mr_log: str) -> tuple[Verdict, bool, str]:
    world.pipeline(BASE, [Attempt(job, trace=base_log)])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt(job, trace=mr_log)], ref="feature", source="merge_request_event")
    found, _ = await run_triage(world.gl, 1)
    (check,) = found.checks
    return check.verdict, found.all_not_yours, headline(found)


async def test_a_test_failing_beside_two_that_fail_on_the_base_is_new(world: CiWorld) -> None:
    verdict, not_yours, said = await _triage(world, "unit-tests", _pytest_log("1.2", "2.0"),
                                             _pytest_log("1.2", "2.0", "3.1"))
    assert verdict == Verdict.NEW and not not_yours
    assert "none looks caused by this MR" not in said


async def test_a_third_diagnostic_where_the_base_has_two_is_new(world: CiWorld) -> None:
    verdict, not_yours, _ = await _triage(world, "lint", _mypy_log(2), _mypy_log(3))
    assert verdict == Verdict.NEW and not not_yours


async def test_the_same_tests_failing_on_the_base_stay_pre_existing(world: CiWorld) -> None:
    verdict, not_yours, _ = await _triage(world, "unit-tests", _pytest_log("1.2", "2.0", "3.1"),
                                          _pytest_log("3.1", "1.2", "2.0"))
    assert verdict == Verdict.PRE_EXISTING and not_yours


async def test_fewer_diagnostics_than_on_the_base_stay_pre_existing(world: CiWorld) -> None:
    verdict, not_yours, _ = await _triage(world, "lint", _mypy_log(3), _mypy_log(2))
    assert verdict == Verdict.PRE_EXISTING and not_yours
