"""The triage bench's attack worlds are what they claim: runner sections wrap every log and differ between runs, a
planted failure sits where it was asked, a short log is the base's but for the runner's sections, and every check a
world's truth names is one the fake GitLab lists for the MR's commit."""

from __future__ import annotations

import re
from typing import Any

import gitlab
import pytest

from bench.attack_baselines import masked_log_equality, name_only, said_by
from bench.attack_model import POSITIONS, LogPool, retried, seed
from bench.runner_formats import FORMATS
from bench.runner_sections import RunnerWorld
from bench.triage_attacks import FAMILIES, build, graded
from hummingbird_agent.triage.model import CheckResult, Triage, Verdict
from tests.servers.gitlab import GitLabServer
from tests.triage.world import sha_of

CHUNK = "FAILED tests/test_core.py::test_cart - AssertionError: cart total 3 != 4"
_SECTION = re.compile(r"section_(?:start|end):\d+:\w+\r\x1b\[0K")


def _log(repo: int, n: int) -> str:
    lines = [f"$ step {i} of build {repo}-{n} took {i * 7} ms" for i in range(60)]
    return "\n".join([*lines[:40], CHUNK.replace("cart", f"cart{n}"), *lines[40:]]) + "\n"


@pytest.fixture
def pool() -> LogPool:
    rows: list[dict[str, Any]] = [{"repository": f"owner{r}/repo{r}", "log_id": f"{r}{n}", "category": n % 2,
             "chunk": CHUNK.replace("cart", f"cart{n}"), "build_log": ""} for r in range(3) for n in range(3)]
    return LogPool(rows, {row["log_id"]: _log(int(row["log_id"][0]), int(row["log_id"][1])) for row in rows})


def _script(trace: str) -> list[str]:
    """What the job's script printed: the lines between the step_script section's start and its end."""
    lines = trace.split("\n")
    start = next(n for n, line in enumerate(lines) if ":step_script\r" in line)
    end = next(n for n, line in enumerate(lines) if re.match(r"section_end:\d+:step_script\r", line))
    return lines[start + 2:end]


def _traces(gl: GitLabServer, project: int, sha: str) -> dict[str, str]:
    client = gitlab.Gitlab(gl.url, private_token=gl.read_token)
    jobs = sorted(client.projects.get(project).jobs.list(get_all=True), key=lambda job: job.id)
    return {job.name: client.projects.get(project).jobs.get(job.id).trace().decode()
            for job in jobs if job.commit["id"] == sha and job.status in ("failed", "success")}


def test_runner_sections_wrap_each_log_and_differ_between_the_mr_and_the_base(pool: LogPool,
                                                                               gitlab_server: GitLabServer) -> None:
    attack = next(a for a in build(pool, ["k"]) if a.kind.endswith("identical"))
    world = RunnerWorld(gitlab_server, 1, attack.repo)
    seed(world, 1, attack)
    (job,) = attack.truth
    mine = _traces(gitlab_server, 1, sha_of(attack.repo, "mr", 1))[job]
    theirs = _traces(gitlab_server, 1, sha_of(attack.repo, "base", 1))[job]
    assert mine.startswith("\x1b[0KRunning with gitlab-runner ") and "ERROR: Job failed: exit code 1" in mine
    assert len(_SECTION.findall(mine)) >= 12 and "Checking out " in mine and "Skipping Git submodules setup" in mine
    assert _script(mine) == _script(theirs) == str(attack.base[0].trace).rstrip("\n").split("\n")
    assert mine != theirs
    head = [line for line in mine.split("\n")[:20] if line.startswith(("\x1b[0K  on ", "section_start"))]
    assert not set(head) & set(theirs.split("\n")), "runner, sha and timestamps differ between the two runs"
    assert "(ref is feature)" in mine and "(ref is main)" in theirs


@pytest.mark.parametrize("where", list(POSITIONS))
def test_family_a_plants_the_new_failure_at_the_asked_position(pool: LogPool, where: str) -> None:
    attacks = [a for a in build(pool, ["a"]) if a.kind.endswith(where)]
    assert len(attacks) == len(FAMILIES["a"][1](pool)) // len(POSITIONS)
    for attack in attacks:
        trace, base = attack.mr[0].trace, attack.base[0].trace
        assert isinstance(trace, str) and isinstance(base, str)
        lines, base_lines = trace.rstrip("\n").split("\n"), base.rstrip("\n").split("\n")
        command = FORMATS[attack.kind.split()[0]].split("\n")[0]
        at = lines.index(command)
        assert abs(at - round(len(base_lines) * POSITIONS[where])) <= 1
        assert len(lines) > len(base_lines) and attack.truth == {"test": "new"}


def test_every_truth_names_a_check_of_the_mr(pool: LogPool) -> None:
    for family in FAMILIES:
        for attack in build(pool, [family]):
            listed = {a.name for a in (*attack.mr, *attack.retry)} | {str(s["name"]) for s in attack.statuses}
            listed |= {child.name for child in attack.children}
            assert set(attack.truth) <= listed, (family, attack.kind)
            assert attack.truth, (family, attack.kind)


def test_skipped_and_canceled_tests_are_listed_but_never_ran(pool: LogPool, gitlab_server: GitLabServer) -> None:
    for n, attack in enumerate(a for a in build(pool, ["d"]) if a.kind.startswith(("skipped", "canceled"))):
        world = RunnerWorld(gitlab_server, n + 1, attack.repo)
        seed(world, 1, attack)
        statuses = {j["name"]: j["status"] for (p, _), j in gitlab_server.jobs.items() if p == n + 1
                    and j["pipeline"]["ref"] == "feature"}
        unproven = [name for name, truth in attack.truth.items() if truth == "unclassified"]
        assert unproven and all(statuses[name] in ("skipped", "canceled") for name in unproven)


def test_a_retry_after_the_verdict_and_a_child_pipeline_are_seeded_as_runner_logs(pool: LogPool,
                                                                                  gitlab_server: GitLabServer) -> None:
    retry = build(pool, ["g"])[0]
    world = RunnerWorld(gitlab_server, 1, retry.repo)
    pipeline = seed(world, 1, retry)
    assert retried(world, retry, pipeline)
    mine = _traces(gitlab_server, 1, sha_of(retry.repo, "mr", 1))["test"]
    assert _script(mine) == str(retry.retry[0].trace).rstrip("\n").split("\n"), "the latest attempt is the retry"
    child = build(pool, ["f"])[0]
    world = RunnerWorld(gitlab_server, 2, child.repo)
    pipeline = seed(world, 1, child)
    (bridge,) = [b for (p, _), b in gitlab_server.bridges.items() if p == 2 and b["pipeline"]["id"] == pipeline]
    assert bridge["name"] == "child-tests" and bridge["status"] == "failed"
    assert "Running with gitlab-runner" in _traces(gitlab_server, 2, sha_of(child.repo, "mr", 1))["unit"]


def test_the_baselines_judge_each_attack_from_its_lists_and_script_output(pool: LogPool) -> None:
    for attack in (a for a in build(pool, ["k"]) if not a.kind.endswith("moved")):
        (truth,) = said_by(masked_log_equality, attack).values()
        assert truth == next(iter(attack.truth.values())), "equal scripts: pre-existing; one problem more: new"
        assert set(said_by(name_only, attack).values()) == {"pre-existing"}, "the job failed on the base"
    skipped = next(a for a in build(pool, ["d"]) if a.kind.startswith("skipped"))
    assert said_by(name_only, skipped)["unit"] == "unclassified"


def test_a_trigger_jobs_truth_is_graded_on_its_child_pipelines_rows(pool: LogPool) -> None:
    attack = build(pool, ["f"])[0]
    found = Triage(sha="0" * 40, checks=(CheckResult("lint", Verdict.PRE_EXISTING, ""),
                                         CheckResult("unit (child pipeline of child-tests)", Verdict.NEW, "")))
    assert {name: said for name, _, said in graded(attack, found)} == {"lint": "pre-existing", "child-tests": "new"}
