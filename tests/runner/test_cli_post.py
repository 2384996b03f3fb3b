"""`run --post`: the printed note is also posted to the MR by the bot, with a session marker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent.cli import main
from tests.runner.harness import IID, PROJECT, PROJECT_ID, REPO, seed_gitlab
from tests.servers import GitLabServer

NOTE = "## Review\nNothing to add."


def test_run_post_creates_a_thread_with_marker(
    tmp_path: Path, gitlab_server: GitLabServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_gitlab(gitlab_server)
    (tmp_path / "turns.yaml").write_text(json.dumps({"turns": [{"text": NOTE}]}))
    config = {
        "gitlab": {"url": gitlab_server.url, "token_env": "HB_BOT_TOKEN"},
        "model": {"provider": "scripted", "script": "turns.yaml"},
        "workflows": {"review-mr": {"description": "review", "prompt": str(REPO / "workflows/review-mr.md"),
                                    "projects": {PROJECT: {"internal_notes": True}}}},
    }
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    monkeypatch.setenv("HB_BOT_TOKEN", gitlab_server.bot_token)  # the environment, not our code
    argv = ["run", "review-mr", "--project", PROJECT, "--mr", str(IID), "--post",
            "--config", str(tmp_path / "config.yaml")]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(NOTE + "\n\n<details>") and "scripted/" in printed
    [discussion] = gitlab_server.discussions[(PROJECT_ID, IID)]
    [note] = discussion["notes"]
    assert note["author"]["id"] == gitlab_server.bot_user["id"] and note["internal"] is True
    assert note["body"].startswith(NOTE) and '"wf":"review-mr"' in note["body"]
