"""A fingerprint line states a failure: a tool's note that it could not do something and went on another way is
no evidence that two failures are one (each failed before the fix: both were called pre-existing)."""

from __future__ import annotations

import pytest

from hummingbird_agent.logs.fingerprint import states_failure
from hummingbird_agent.triage.model import NOT_YOURS, Verdict
from tests.triage.conftest import run_triage
from tests.triage.world import Attempt, CiWorld, sha_of

BASE = sha_of("base")
# Lines seen in two builds of one project whose truth was a generic failure on both sides.
INFORMATIONAL = [
    "Starting a Gradle Daemon, 1 incompatible and 2 stopped Daemons could not be reused, use --status for details",
    "Could not find .travis.yml, using standard configuration.",
]
GENERIC_TAIL = ['The command "./ci/run.sh" exited with 1.', "", "Done. Your build exited with 1."]


def _log(informational: str, *extra: str) -> str:
    """The failing step prints the informational line, then its own output, then only that it failed."""
    setup = [f"set-up of the build, part {n}" for n in range(12)]
    return "\n".join(["$ ./ci/setup.sh", *setup, "$ ./ci/run.sh", informational, *extra, *GENERIC_TAIL])


@pytest.mark.parametrize("line", INFORMATIONAL, ids=["gradle-daemon", "travis-config"])
async def test_a_generic_failure_whose_only_failure_word_is_an_informational_line_is_not_pre_existing(
        world: CiWorld, line: str) -> None:
    # The base's log prints every line the MR's does (and more): only the informational line could match them.
    world.pipeline(BASE, [Attempt("check", trace=_log(line, "Installing the extra toolchain"))])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt("check", trace=_log(line))], ref="feature", source="merge_request_event")
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict not in NOT_YOURS and check.verdict == Verdict.UNCLASSIFIED


@pytest.mark.parametrize("line", INFORMATIONAL, ids=["gradle-daemon", "travis-config"])
async def test_the_same_whole_log_with_an_informational_line_stays_pre_existing(world: CiWorld, line: str) -> None:
    world.pipeline(BASE, [Attempt("check", trace=_log(line, *[f"compiled module {n}" for n in range(20)]))])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [Attempt("check", trace=_log(line, *[f"compiled module {n}" for n in range(20)]))],
                   ref="feature", source="merge_request_event")
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict == Verdict.PRE_EXISTING


def test_a_failure_stated_beside_a_fallback_still_states_a_failure() -> None:
    assert not any(states_failure(line) for line in INFORMATIONAL)
    assert not states_failure("Unable to load native-hadoop library for your platform... using builtin-java classes")
    for line in ("error: could not compile `app` (lib) due to 2 previous errors",
                 "Could not resolve all dependencies for configuration ':app:compileClasspath'.",
                 "ERROR: Could not find a version that satisfies the requirement foo==9.9, using pip 24",
                 "npm ERR! Could not resolve dependency:", "fatal: could not read Username for 'https://x.org'"):
        assert states_failure(line), line
