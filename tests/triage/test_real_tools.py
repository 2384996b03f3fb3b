"""The triage on what real compilers, linters, type checkers and test runners print (recorded in
real_tools_output.txt by tests/triage/real_tools.py), in GitLab job logs whose runner, ref and commit differ between
the MR and the base: the same problems on the base are pre-existing, also when they moved down; one problem or
failing test more is new, also when it is printed early in a long log that then prints hundreds of lines of the
base's own failures. Each tool installed here is run again and must still report what the record says."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from hummingbird_agent.logs import findings
from hummingbird_agent.triage.model import Verdict
from tests.triage.conftest import run_triage
from tests.triage.gitlab_log import BRANCH, MAIN, job_log
from tests.triage.real_tools import TOOLS, Tool, recorded
from tests.triage.world import Attempt, CiWorld, sha_of

RECORD = recorded()
# Lines of the base's own failures printed after the MR's new one (other modules of the same run).
LONG_LOG_LINES = 300


def _filler(tool: Tool) -> list[str]:
    """The base's output again and again, each run behind its command, to at least LONG_LOG_LINES lines."""
    lines: list[str] = []
    while len(lines) < LONG_LOG_LINES:
        lines += [f"$ {tool.shown}", *RECORD[tool.name, "base"].split("\n")]
    return lines


def _output(tool: Tool, variant: str, long: bool) -> str:
    return "\n".join([RECORD[tool.name, variant], *(_filler(tool) if long else [])])


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
async def test_real_tool_output_is_pre_existing_when_the_base_reports_it_and_new_when_one_is_added(
        world: CiWorld, tool: Tool) -> None:
    cases = [("same", "base", False), ("moved", "moved", False), ("added", "added", False),
             ("same, long", "base", True), ("moved, long", "moved", True), ("added early, long", "added", True)]
    # Two jobs, so that neither log is found for the other's MRs on the target branch.
    job = {False: tool.name, True: f"{tool.name}-all-modules"}
    for long in (False, True):
        world.pipeline(sha_of("base", long), [Attempt(job[long], trace=job_log(tool.shown, _output(tool, "base", long),
                                                                              MAIN))])
    for iid, (_, variant, long) in enumerate(cases, start=1):
        mr = world.mr(iid, base_sha=sha_of("base", long))
        world.pipeline(mr["sha"], [Attempt(job[long], trace=job_log(tool.shown, _output(tool, variant, long),
                                                                    BRANCH))],
                       ref=f"{BRANCH.ref}-{iid}", source="merge_request_event")
    verdicts = {}
    for iid, (case, _, _) in enumerate(cases, start=1):
        found, _ = await run_triage(world.gl, iid)
        verdicts[case] = (found.checks[0].verdict, found.all_not_yours)
    pre_existing, new = (Verdict.PRE_EXISTING, True), (Verdict.NEW, False)
    assert verdicts == {"same": pre_existing, "moved": pre_existing, "added": new,
                        "same, long": pre_existing, "moved, long": pre_existing, "added early, long": new}


def _reported(output: str) -> Counter[findings.Finding]:
    return Counter(found for _, found in findings.read(output.split("\n")) if found is not None)


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_each_installed_tool_still_reports_what_the_record_says(tool: Tool, tmp_path: Path) -> None:
    if (why := tool.missing()) is not None:
        pytest.skip(why)
    for variant in ("base", "added"):
        assert _reported(tool.run(tmp_path, variant)) == _reported(RECORD[tool.name, variant]), variant
