"""A failing test the base lacks is new wherever the log prints it: far above the log's end, before the same
pytest block the base ends with (each was called pre-existing before the runners' failure lines were findings)."""

from __future__ import annotations

import pytest

from hummingbird_agent.triage.model import Verdict
from tests.triage.conftest import run_triage
from tests.triage.gitlab_log import BRANCH, MAIN, job_log
from tests.triage.world import Attempt, CiWorld, sha_of

BASE = sha_of("base")
PYTEST_BLOCK = ["$ pytest -q tests/", "..F...", "=" * 30 + " FAILURES " + "=" * 30,
                "_" * 20 + " test_parse " + "_" * 20, ">       assert parse('1.2') is not None",
                "E       AssertionError: assert None is not None", "tests/test_core.py:41: AssertionError",
                "=" * 20 + " short test summary info " + "=" * 20,
                "FAILED tests/test_core.py::test_parse - AssertionError: assert None is not None",
                "1 failed, 5 passed in 0.31s"]
# Other runners' own failure lines, each naming a test the base does not fail.
EARLY = {
    "bracketed": "[FAIL] test_invoice_rounding",
    "bare": "FAIL test_invoice_rounding",
    "failed": "FAILED test_invoice_rounding",
    "cargo": "test billing::invoice_rounding ... FAILED",
    "ctest": "4/9 Test #4: invoice_rounding .................***Failed    0.02 sec",
    "phpunit": "1) InvoiceTest::testRounding",
    "junit4": "1) rounding(InvoiceTest)",
    "rspec": "  1) Invoice rounds half up",
    "jest": "    ✕ rounds half up (3 ms)",
    "vitest": " FAIL  src/invoice.test.ts > invoice > rounds half up",
    "mocha": "    1) rounds half up",
    "node-spec": "✖ rounds half up (1.2ms)",
    "tap": "not ok 7 - invoice rounds half up",
    "prove": "#   Failed test 'invoice rounds half up'",
    "junit5": "│  ├─ roundsHalfUp() ✘ expected: <3> but was: <2>",
    "go": "--- FAIL: TestInvoiceRounding (0.00s)",
    "go-build": "./invoice.go:12:9: undefined: roundHalfUp",
    "tsc": "src/invoice.ts:12:9 - error TS2304: Cannot find name 'roundHalfUp'.",
}


def _output(*early: str) -> str:
    """Tests of another suite (the early lines among them), then 70 lines of set-up, then the pytest block."""
    return "\n".join(["$ ./run-other-suites.sh", *early, *[f"collecting module_{n}.py" for n in range(70)],
                      *PYTEST_BLOCK])


@pytest.mark.parametrize("shape", sorted(EARLY))
async def test_a_failing_test_printed_far_above_the_base_s_own_failure_is_new(world: CiWorld, shape: str) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", trace=job_log("make test", _output(), MAIN))])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt("unit-tests", trace=job_log("make test", _output(EARLY[shape]), BRANCH))],
                   ref=BRANCH.ref, source="merge_request_event")
    found, _ = await run_triage(world.gl, 1)
    assert (found.checks[0].verdict, found.all_not_yours) == (Verdict.NEW, False)


async def test_the_same_early_failure_on_the_base_is_pre_existing(world: CiWorld) -> None:
    early = EARLY["bracketed"]
    world.pipeline(BASE, [Attempt("unit-tests", trace=job_log("make test", _output(early), MAIN))])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt("unit-tests", trace=job_log("make test", _output(early), BRANCH))],
                   ref=BRANCH.ref, source="merge_request_event")
    found, _ = await run_triage(world.gl, 1)
    assert found.checks[0].verdict == Verdict.PRE_EXISTING
