"""`run --post`: the printed note is also posted to the MR by the bot, with a session marker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent.cli import main
from hummingbird_agent.gitlab.markers import parse_markers
from tests.runner.harness import IID, PROJECT, PROJECT_ID, REPO, seed_gitlab
from tests.servers import GitLabServer

NOTE = "## Review\nNothing to add."


def write_config(tmp_path: Path, gitlab_server: GitLabServer, turns: list[str], action: str = "note") -> str:
    (tmp_path / "turns.yaml").write_text(json.dumps({"turns": [{"text": t} for t in turns]}))
    config = {
        "gitlab": {"url": gitlab_server.url, "token_env": "HB_BOT_TOKEN"},
        "model": {"provider": "scripted", "script": "turns.yaml"},
        "workflows": {"review-mr": {"description": "review", "prompt": str(REPO / "workflows/review-mr.md"),
                                    "action": action, "projects": {PROJECT: {"internal_notes": True}}}},
    }
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    return str(tmp_path / "config.yaml")


def run_argv(config: str, *extra: str) -> list[str]:
    return ["run", "review-mr", "--project", PROJECT, "--mr", str(IID), "--config", config, *extra]


def test_run_post_creates_a_thread_with_marker(
    tmp_path: Path, gitlab_server: GitLabServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_gitlab(gitlab_server)
    config = write_config(tmp_path, gitlab_server, [NOTE])
    monkeypatch.setenv("HB_BOT_TOKEN", gitlab_server.bot_token)  # the environment, not our code
    assert main(run_argv(config, "--post")) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(NOTE + "\n\n<details>") and "scripted/" in printed
    [discussion] = gitlab_server.discussions[(PROJECT_ID, IID)]
    [note] = discussion["notes"]
    assert note["author"]["id"] == gitlab_server.bot_user["id"] and note["internal"] is True
    assert note["body"].startswith(NOTE) and '"wf":"review-mr"' in note["body"]


def test_resumed_run_posts_the_saved_session_id(
    tmp_path: Path, gitlab_server: GitLabServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_gitlab(gitlab_server)
    config = write_config(tmp_path, gitlab_server, [NOTE, "Follow-up answer."])
    monkeypatch.setenv("HB_BOT_TOKEN", gitlab_server.bot_token)
    session = tmp_path / "session"
    assert main(run_argv(config, "--save-session", str(session))) == 0
    saved_id = json.loads((session / "context.json").read_text())["session_id"]
    assert main(run_argv(config, "--resume", str(session), "--message", "and?", "--post")) == 0
    [discussion] = gitlab_server.discussions[(PROJECT_ID, IID)]
    [marker] = parse_markers(discussion["notes"][0]["body"])
    assert marker.id == saved_id


def test_post_is_refused_for_a_workflow_whose_action_is_none(
    tmp_path: Path, gitlab_server: GitLabServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_gitlab(gitlab_server)
    config = write_config(tmp_path, gitlab_server, [NOTE], action="none")
    monkeypatch.setenv("HB_BOT_TOKEN", gitlab_server.bot_token)
    assert main(run_argv(config, "--post")) == 2
    err = capsys.readouterr().err
    assert "action: none" in err and len(err.strip().splitlines()) == 1
    assert gitlab_server.discussions.get((PROJECT_ID, IID), []) == []
