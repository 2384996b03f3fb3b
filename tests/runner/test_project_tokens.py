"""One service, two teams, two read tokens: each project's runs read GitLab with the token its entry names,
see only their own project, and a project the token cannot see is one line in the note's data gaps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.runner.harness import DEVELOPER, MEMBER, SECRETS, expect_turns, pipeline_event, start_service
from tests.servers import GeminiServer, GitLabServer, MotoServer
from tests.servers.gemini import function_call_turn, text_turn

pytestmark = [pytest.mark.podman, pytest.mark.timeout(300)]

IID = 7
TEAMS = {  # project id -> (path, env var, token, job id, a line only its log holds)
    1: ("team-a/app", "TEAM_A_READ_TOKEN", "glpat-team-a-only", 11, "A-ONLY: undefined reference to frob"),
    2: ("team-b/lib", "TEAM_B_READ_TOKEN", "glpat-team-b-only", 21, "B-ONLY: test_parse timed out"),
}


def seed(gitlab: GitLabServer) -> None:
    for pid, (path, _, token, job, line) in TEAMS.items():
        gitlab.add_project(pid, path)
        gitlab.add_mr(pid, IID, sha=f"{pid}" * 40, title=f"Change of {path}", author_id=MEMBER)
        gitlab.add_member(pid, MEMBER, DEVELOPER)
        gitlab.add_member(pid, gitlab.bot_user["id"], DEVELOPER)
        gitlab.add_job(pid, job, sha=f"{pid}" * 40, trace=f"building\n{line}\nERROR: job failed\n")
        gitlab.add_token(token, 9100 + pid, scope="read_api", projects=[path])


def two_teams(config: dict[str, Any]) -> None:
    settings = {path: {"max_runs_per_mr": 2, "gitlab_token_env": env} for path, env, *_ in TEAMS.values()}
    config["workflows"]["analyze-failures"]["projects"] = settings


def event(pid: int) -> dict[str, Any]:
    body = pipeline_event(sha=f"{pid}" * 40)
    body["project"].update(id=pid, path_with_namespace=TEAMS[pid][0], name=TEAMS[pid][0].split("/")[1])
    return body


def notes(gitlab: GitLabServer, pid: int) -> list[str]:
    bot = gitlab.bot_user["id"]
    bodies = [n["body"] for d in gitlab.discussions.get((pid, IID), []) for n in d["notes"] if n["author"]["id"] == bot]
    return [b for b in bodies if not b.startswith("Running the workflow")]


async def test_two_projects_with_two_tokens_each_read_only_their_own(
        tmp_path: Path, gitlab_server: GitLabServer, gemini_server: GeminiServer, moto_server: MotoServer) -> None:
    seed(gitlab_server)
    secrets = {env: token for _, env, token, *_ in TEAMS.values()}
    async with start_service(tmp_path, gitlab_server, gemini_server, moto_server, tweak=two_teams,
                             secrets=secrets) as service:
        seen: dict[int, str] = {}
        for pid, other in ((1, 2), (2, 1)):
            path, env, _, job, _ = TEAMS[pid]
            other_path, _, _, other_job, _ = TEAMS[other]
            before = len(service.model.generate_calls)
            expect_turns(service.model,
                         function_call_turn("gitlab_get_job_log", {"project": path, "job_id": job}),
                         function_call_turn("gitlab_get_job_log", {"project": other_path, "job_id": other_job}),
                         function_call_turn("gitlab_get_mr_details", {"project": other_path, "mr_iid": IID}),
                         text_turn(f"## Analysis of {path}"))
            service.publish(event(pid))
            await service.wait_for(lambda pid=pid: len(notes(gitlab_server, pid)) == 1, f"the note on {path}")
            seen[pid] = json.dumps([c.body for c in service.model.generate_calls[before:]])
            [body] = notes(gitlab_server, pid)
            gaps = body[body.index("**Data gaps**"):body.index("</details>")]
            refusal = f"the GitLab read token in {env} cannot read project {other_path}"
            assert gaps.count(refusal) == 1, gaps  # two refused calls, one line

    for pid, other in ((1, 2), (2, 1)):
        assert TEAMS[pid][4] in seen[pid] and TEAMS[other][4] not in seen[pid]
        assert f"Change of {TEAMS[other][0]}" not in seen[pid]
    # Each data-source request carried the token of the project it was for, or was refused; the workflow's
    # own token (which could read both) was never used.
    used = {r.header("PRIVATE-TOKEN") for r in gitlab_server.requests}
    assert SECRETS["GITLAB_READ_TOKEN"] not in used
    for path, *_ in TEAMS.values():  # its own run's read and the other team's refused attempt
        log_reads = gitlab_server.requests_to(rf"/projects/{path}/jobs/\d+/trace")
        assert {r.header("PRIVATE-TOKEN") for r in log_reads} == {TEAMS[1][2], TEAMS[2][2]}
    texts = [b for pid in TEAMS for b in notes(gitlab_server, pid)] + list(seen.values())
    assert all(token not in text for _, _, token, *_ in TEAMS.values() for text in texts)
