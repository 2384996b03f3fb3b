"""The note shows what failed: the table and the headline carry the log's own failure line (the normalised
fingerprint stays the comparison key), and an infrastructure row the runner's own failure line."""

from __future__ import annotations

from hummingbird_agent.triage.model import Verdict
from hummingbird_agent.triage.render import cell, headline, table
from tests.triage.conftest import failing_log, run_triage
from tests.triage.world import Attempt, CiWorld, sha_of

BASE = sha_of("base")
WIDGET = "src/widget.c:41:7: error: 'count' undeclared (first use in this function)"
RUNNER = "ERROR: Job failed (system failure): Error response from daemon: no space left on device"


async def test_the_table_and_headline_show_the_raw_failure_line_of_the_log(world: CiWorld) -> None:
    log = failing_log("test_widget", "AssertionError: expected 'v1.2' got 'v1.3'", run=4)
    world.pipeline(BASE, [Attempt("build", "success", trace="$ make\nok\n"),
                          Attempt("unit", "success", trace="ok\n")])
    world.pipeline(BASE, [Attempt("runner", trace=f"Preparing environment\n{RUNNER}\n",
                                  failure_reason="runner_system_failure")])
    mr = world.mr(1, base_sha=BASE)
    world.pipeline(mr["sha"], [
        Attempt("build", trace=f"$ make\ngcc -c src/widget.c\n{WIDGET}\nmake: *** [widget.o] Error 1\n"
                               "ERROR: Job failed: exit code 1"),
        Attempt("unit", trace=log),
        Attempt("runner", trace=f"Running with gitlab-runner 17.1.0\nPreparing environment\n{RUNNER}\n",
                failure_reason="runner_system_failure"),
    ], ref="feature", source="merge_request_event")
    found, _ = await run_triage(world.gl, 1)
    checks = {c.name: c for c in found.checks}
    build, unit, runner = checks["build"], checks["unit"], checks["runner"]
    assert build.verdict == unit.verdict == Verdict.NEW
    assert build.failure_line == WIDGET and build.fingerprint.lines and build.fingerprint.lines[0] != WIDGET
    log_lines = {line.strip() for line in log.splitlines()}
    assert unit.failure_line in log_lines and "'v1.2'" in unit.failure_line
    rows = table(found)
    assert f"`{cell(WIDGET, 160)}`" in rows and f"`{cell(unit.failure_line, 160)}`" in rows
    assert f"`{cell(WIDGET, 120)}` in `build`" in headline(found)
    assert runner.verdict == Verdict.INFRASTRUCTURE and runner.failure_line == RUNNER
    assert runner.excerpt[-1] == RUNNER and f"`{cell(RUNNER, 160)}`" in rows
