"""`run` and GitLab: the MR is read before any model call (a missing or unreadable one is one line), a printed
note invites no reply, and with `--post` the note is also posted to the MR by the bot, with a session marker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent.cli import main
from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.markers import parse_markers
from tests.runner.harness import IID, PROJECT, PROJECT_ID, REPO, seed_gitlab
from tests.servers import GitLabServer, text_turn
from tests.servers.model_common import model_section
from tests.servers.openai import OpenAIServer

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


def test_a_printed_note_does_not_invite_a_reply_but_a_posted_one_does(
    tmp_path: Path, gitlab_server: GitLabServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_gitlab(gitlab_server)
    config = write_config(tmp_path, gitlab_server, [NOTE, NOTE])
    monkeypatch.setenv("HB_BOT_TOKEN", gitlab_server.bot_token)
    assert main(run_argv(config)) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(NOTE) and note_text.FOOTER_UNPOSTED in printed
    assert note_text.FOOTER_CONTINUE not in printed and note_text.REPLY_PROMPT not in printed
    assert main(run_argv(config, "--post", "--save-session", str(tmp_path / "session"))) == 0
    printed = capsys.readouterr().out
    assert note_text.FOOTER_CONTINUE in printed and note_text.FOOTER_UNPOSTED not in printed
    [discussion] = gitlab_server.discussions[(PROJECT_ID, IID)]
    assert note_text.REPLY_PROMPT in discussion["notes"][0]["body"]


def test_a_posted_note_whose_session_is_not_kept_invites_no_reply(
    tmp_path: Path, gitlab_server: GitLabServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --save-session nothing could resume the run, so a reply could only get "session expired"."""
    seed_gitlab(gitlab_server)
    config = write_config(tmp_path, gitlab_server, [NOTE])
    monkeypatch.setenv("HB_BOT_TOKEN", gitlab_server.bot_token)
    assert main(run_argv(config, "--post")) == 0
    printed = capsys.readouterr().out
    [discussion] = gitlab_server.discussions[(PROJECT_ID, IID)]
    posted = discussion["notes"][0]["body"]
    for body in (printed, posted):
        assert note_text.FOOTER_UNKEPT in body, body
        assert note_text.FOOTER_CONTINUE not in body and note_text.REPLY_PROMPT not in body
    assert posted.startswith(NOTE) and parse_markers(posted)  # still the bot's note with its marker


def model_config(tmp_path: Path, gitlab_server: GitLabServer, model: OpenAIServer) -> str:
    """review-mr on the OpenAI-compatible fake (so that model calls are counted), reading GitLab with its own
    read token in GITLAB_READ_TOKEN."""
    config = {
        "gitlab": {"url": gitlab_server.url, "token_env": "HB_BOT_TOKEN"},
        "model": model_section("openai", model, "OPENAI_KEY"),
        "workflows": {"review-mr": {"description": "review", "prompt": str(REPO / "workflows/review-mr.md"),
                                    "model": "gpt-test", "projects": {PROJECT: {}},
                                    "data_sources": {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}}}},
    }
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    return str(tmp_path / "config.yaml")


@pytest.mark.parametrize(
    ("project", "iid", "read_token", "post", "expected"),
    [
        ("group/nope", IID, None, False, f"cannot run review-mr on group/nope !{IID}: project group/nope not found, "
                                         "or not visible to the token in GITLAB_READ_TOKEN (HTTP 404)"),
        (PROJECT, 999, None, False, f"cannot run review-mr on {PROJECT} !999: merge request !999 not found in "
                                    f"{PROJECT} (HTTP 404)"),
        (PROJECT, IID, "glpat-revoked-secret", False, f"cannot run review-mr on {PROJECT} !{IID}: GitLab refused "
                                                      "the token in GITLAB_READ_TOKEN (HTTP 401)"),
        ("group/nope", IID, None, True, f"cannot run review-mr on group/nope !{IID}: project group/nope not found, "
                                        "or not visible to the token in HB_BOT_TOKEN (HTTP 404)"),
    ],
)
def test_a_missing_or_unreadable_mr_stops_the_run_before_any_model_call(
    tmp_path: Path, gitlab_server: GitLabServer, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], project: str, iid: int, read_token: str | None, post: bool, expected: str,
) -> None:
    seed_gitlab(gitlab_server)
    openai_server.script(text_turn(NOTE))
    config = model_config(tmp_path, gitlab_server, openai_server)
    monkeypatch.setenv("OPENAI_KEY", openai_server.api_key or "")
    monkeypatch.setenv("HB_BOT_TOKEN", gitlab_server.bot_token)
    monkeypatch.setenv("GITLAB_READ_TOKEN", read_token or gitlab_server.read_token)
    argv = ["run", "review-mr", "--project", project, "--mr", str(iid), "--config", config]
    assert main([*argv, "--post"] if post else argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"error: {expected}\n"
    assert openai_server.generate_calls == [] and gitlab_server.discussions.get((PROJECT_ID, IID), []) == []
    for token in (gitlab_server.bot_token, gitlab_server.read_token, "glpat-revoked-secret"):
        assert token not in captured.err


def test_a_readable_mr_runs_with_the_read_token(
    tmp_path: Path, gitlab_server: GitLabServer, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed_gitlab(gitlab_server)
    openai_server.script(text_turn(NOTE))
    config = model_config(tmp_path, gitlab_server, openai_server)
    monkeypatch.setenv("OPENAI_KEY", openai_server.api_key or "")
    monkeypatch.delenv("HB_BOT_TOKEN", raising=False)  # without --post the bot token is not needed
    monkeypatch.setenv("GITLAB_READ_TOKEN", gitlab_server.read_token)
    assert main(run_argv(config)) == 0
    assert capsys.readouterr().out.startswith(NOTE) and len(openai_server.generate_calls) == 1


def test_the_mr_is_read_with_the_projects_own_read_token(
    tmp_path: Path, gitlab_server: GitLabServer, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The project names its own variable; its token sees another project only, so the run stops naming it."""
    seed_gitlab(gitlab_server)
    gitlab_server.add_project(2, "other/app")
    gitlab_server.add_token("glpat-other-team-only", 9102, scope="read_api", projects=["other/app"])
    config = model_config(tmp_path, gitlab_server, openai_server)
    text = json.loads(Path(config).read_text())
    text["workflows"]["review-mr"]["projects"] = {PROJECT: {"gitlab_token_env": "TEAM_READ_TOKEN"}}
    Path(config).write_text(json.dumps(text))
    monkeypatch.setenv("OPENAI_KEY", openai_server.api_key or "")
    monkeypatch.setenv("HB_BOT_TOKEN", gitlab_server.bot_token)
    monkeypatch.setenv("GITLAB_READ_TOKEN", gitlab_server.read_token)  # could read it: must not be used
    monkeypatch.setenv("TEAM_READ_TOKEN", "glpat-other-team-only")
    assert main(run_argv(config)) == 2
    assert capsys.readouterr().err == (f"error: cannot run review-mr on {PROJECT} !{IID}: project {PROJECT} not "
                                       "found, or not visible to the token in TEAM_READ_TOKEN (HTTP 404)\n")
    assert openai_server.generate_calls == []


def test_without_any_gitlab_token_the_mr_is_read_anonymously(
    tmp_path: Path, gitlab_server: GitLabServer, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed_gitlab(gitlab_server)  # the fake answers 401 to a request without a token, as GitLab does for private ones
    config = model_config(tmp_path, gitlab_server, openai_server)
    monkeypatch.setenv("OPENAI_KEY", openai_server.api_key or "")
    for env in ("HB_BOT_TOKEN", "GITLAB_READ_TOKEN"):
        monkeypatch.delenv(env, raising=False)
    assert main(run_argv(config)) == 2
    assert capsys.readouterr().err == (f"error: cannot run review-mr on {PROJECT} !{IID}: GitLab refused an "
                                       "anonymous request (no GitLab token is set) (HTTP 401)\n")
    assert openai_server.generate_calls == []
