"""The triage on what real compilers, linters, type checkers and test runners print (run live here; what
they printed once is in real_tools_output.txt): the same problems on the base are pre-existing, also when
they moved down, and one problem more is new."""

from __future__ import annotations

from pathlib import Path

import pytest

from hummingbird_agent.triage.model import Verdict
from tests.triage.conftest import run_triage
from tests.triage.real_tools import TOOLS, Tool
from tests.triage.world import Attempt, CiWorld, sha_of

BASE = sha_of("base")


def _log(tool: Tool, output: str, run: int) -> str:
    """A GitLab job log around the tool's output: the runner's preamble, the command, the job's end."""
    return "\n".join([
        f"Running with gitlab-runner 17.{run}.0 (abc{run:04d}ef)", f"  on docker-runner-{run} t{run}_xYz",
        "Preparing the \"docker\" executor", "Using Docker executor with image debian:12 ...",
        f"Getting source from Git repository 2026-01-0{run}T10:00:0{run}Z", f"$ {tool.shown}", output.rstrip("\n"),
        "Cleaning up project directory and file based variables", "ERROR: Job failed: exit code 1"])


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
async def test_real_tool_output_is_pre_existing_when_the_base_reports_it_and_new_when_one_is_added(
        world: CiWorld, tool: Tool, tmp_path: Path) -> None:
    if (why := tool.missing()) is not None:
        pytest.skip(why)
    world.pipeline(BASE, [Attempt(tool.name, trace=_log(tool, tool.run(tmp_path / "base", "base"), 1))])
    variants = {"same": tool.run(tmp_path / "same", "base"), "moved": tool.run(tmp_path, "moved"),
                "added": tool.run(tmp_path, "added")}
    for iid, output in enumerate(variants.values(), start=1):
        mr = world.mr(iid, base_sha=BASE)
        world.pipeline(mr["sha"], [Attempt(tool.name, trace=_log(tool, output, 2))], ref=f"feature-{iid}",
                       source="merge_request_event")
    verdicts = {}
    for iid, variant in enumerate(variants, start=1):
        found, _ = await run_triage(world.gl, iid)
        verdicts[variant] = (found.checks[0].verdict, found.all_not_yours)
    assert verdicts == {"same": (Verdict.PRE_EXISTING, True), "moved": (Verdict.PRE_EXISTING, True),
                        "added": (Verdict.NEW, False)}
