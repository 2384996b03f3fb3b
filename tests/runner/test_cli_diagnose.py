"""`run <bamboo-diagnose workflow>` from the command line (fake GitLab, scripted Gemini server, embedded stores):
incidents learned with `bamboo populate` diagnose the failing jobs of the MR's head commit, the note is printed
(and posted with --post, inviting no reply); a disabled or locked knowledge base is one line; no token is printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent.cli import main
from hummingbird_agent.gitlab import note_text
from hummingbird_agent.gitlab.markers import parse_markers
from tests.bamboo.test_cli_manners import held
from tests.runner.harness import IID, PROJECT, PROJECT_ID, REPO, SHA, seed_gitlab
from tests.runner.test_bamboo_e2e import CAUSE, FIRST_LINE, FIX, SECOND_LINE, build_log, fail_build, knowledge_model
from tests.servers import GeminiServer, GitLabServer
from tests.servers.model_common import model_section

pytestmark = pytest.mark.timeout(300)
WORKFLOW = "bamboo-diagnose"
INCIDENTS = ("npm-mirror-1", "npm-mirror-2")


def write_config(tmp_path: Path, gitlab: GitLabServer, model: GeminiServer, enabled: bool = True) -> str:
    config = {
        "gitlab": {"url": gitlab.url, "token_env": "HB_BOT_TOKEN"},
        "model": model_section("gemini", model, "GEMINI_API_KEY"),
        "bamboo": {"enabled": enabled, "model": "gemini-test", "graph": {"path": str(tmp_path / "kb" / "graph")},
                   "vectors": {"path": str(tmp_path / "kb" / "qdrant")},
                   "embeddings": {"provider": "hashing", "dimensions": 256}},
        "workflows": {
            WORKFLOW: {"description": "diagnose from the knowledge base", "engine": WORKFLOW,
                       "prompt": str(REPO / "workflows" / f"{WORKFLOW}.md"),
                       "data_sources": {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}}, "projects": {PROJECT: {}}},
            "bamboo-accumulate": {"description": "learn", "engine": "bamboo-accumulate",
                                  "prompt": str(REPO / "workflows" / "bamboo-accumulate.md")},
        },
    }
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    return str(tmp_path / "config.yaml")


def learn(tmp_path: Path, config: str, model: GeminiServer, capsys: pytest.CaptureFixture[str]) -> None:
    """Two resolved npm-mirror incidents learned through `bamboo populate`."""
    lines = [{"id": incident, "email_text": "The npm mirror was down during the build; we switched the job to the "
                                            "internal mirror.",
              "task_data": {"project": PROJECT, "job": "build", "stage": "build"},
              "task_logs": {"build": build_log(FIRST_LINE)}} for incident in INCIDENTS]
    (tmp_path / "learned.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["bamboo", "populate", str(tmp_path / "learned.jsonl"), "--config", config]) == 0
    assert "stored: 2" in capsys.readouterr().out


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gitlab_server: GitLabServer,
           gemini_server: GeminiServer) -> str:
    """The MR in the fake GitLab, the tokens in the environment (not our code), the knowledge base enabled."""
    seed_gitlab(gitlab_server)
    monkeypatch.setenv("HB_BOT_TOKEN", gitlab_server.bot_token)
    monkeypatch.setenv("GITLAB_READ_TOKEN", gitlab_server.read_token)
    monkeypatch.setenv("GEMINI_API_KEY", gemini_server.api_key or "")
    gemini_server.responder = knowledge_model  # every knowledge-base call, answered from its prompt
    return write_config(tmp_path, gitlab_server, gemini_server)


@pytest.fixture
def learned(config: str, tmp_path: Path, gitlab_server: GitLabServer, gemini_server: GeminiServer,
            capsys: pytest.CaptureFixture[str]) -> str:
    """Two incidents learned, and the MR's head commit failing the same way."""
    learn(tmp_path, config, gemini_server, capsys)
    fail_build(gitlab_server, SHA, 801, SECOND_LINE, 501)
    return config


def run_argv(config: str, *extra: str) -> list[str]:
    return ["run", WORKFLOW, "--project", PROJECT, "--mr", str(IID), "--config", config, *extra]


def assert_no_token(text: str, gitlab: GitLabServer, model: GeminiServer) -> None:
    for token in (gitlab.bot_token, gitlab.read_token, model.api_key or "test-key"):
        assert token not in text


def diagnose_calls(model: GeminiServer) -> list[dict[str, Any]]:
    return [c.body for c in model.generate_calls
            if c.body["systemInstruction"]["parts"][0]["text"].startswith("You diagnose a new CI failure")]


def test_run_prints_the_diagnosis_naming_the_learned_cause(
    learned: str, gitlab_server: GitLabServer, gemini_server: GeminiServer, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(run_argv(learned)) == 0
    captured = capsys.readouterr()
    note = captured.out
    assert note.startswith("## Knowledge-base diagnosis")
    assert f"**Most likely cause:** {CAUSE}" in note and f"**Resolution:** {FIX}" in note
    assert f"1. {CAUSE}" in note  # ranked from what was learned, not from the model's answer
    assert all(f"`{incident}`" in note for incident in INCIDENTS)
    [diagnosis] = diagnose_calls(gemini_server)
    assert "ETIMEDOUT" in json.dumps(diagnosis) and CAUSE in json.dumps(diagnosis)  # the head commit's log
    assert gitlab_server.discussions[(PROJECT_ID, IID)] == []  # printed only
    assert_no_token(captured.out + captured.err, gitlab_server, gemini_server)


def test_run_post_posts_the_diagnosis_without_inviting_a_reply(
    learned: str, gitlab_server: GitLabServer, gemini_server: GeminiServer, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(run_argv(learned, "--post", "--message", "is it the mirror again?")) == 0
    captured = capsys.readouterr()
    [discussion] = gitlab_server.discussions[(PROJECT_ID, IID)]
    [posted] = discussion["notes"]
    assert posted["author"]["id"] == gitlab_server.bot_user["id"]
    assert posted["body"].startswith(captured.out.strip()) and f"**Most likely cause:** {CAUSE}" in posted["body"]
    assert note_text.REPLY_PROMPT not in posted["body"]  # a knowledge-base note keeps no conversation
    [marker] = parse_markers(posted["body"])
    assert marker.wf == WORKFLOW
    assert "is it the mirror again?" in json.dumps([c.body for c in gemini_server.generate_calls])
    assert_no_token(captured.out + captured.err + posted["body"], gitlab_server, gemini_server)


def test_a_disabled_knowledge_base_is_one_line_and_creates_nothing(
    config: str, tmp_path: Path, gitlab_server: GitLabServer, gemini_server: GeminiServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(tmp_path, gitlab_server, gemini_server, enabled=False)
    assert main(run_argv(config, "--post")) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert captured.err.startswith(f"error: run {WORKFLOW}: the knowledge base is off")
    assert "`bamboo: {enabled: true}`" in captured.err and "Nothing was created" in captured.err
    assert not (tmp_path / "kb").exists() and gemini_server.generate_calls == []
    assert gitlab_server.discussions[(PROJECT_ID, IID)] == []
    assert_no_token(captured.err, gitlab_server, gemini_server)


def test_a_graph_locked_by_another_process_is_the_lock_line(
    config: str, tmp_path: Path, gemini_server: GeminiServer, capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "kb").mkdir()
    with held("graph", tmp_path / "kb" / "graph") as pid:
        assert main(run_argv(config)) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert f"graph store {tmp_path / 'kb' / 'graph'} is locked by process {pid}" in captured.err
    assert gemini_server.generate_calls == []


@pytest.mark.parametrize(("extra", "expected"), [
    (["--resume", "saved"], f"error: --resume: workflow {WORKFLOW} runs on the knowledge base, which keeps no"),
    (["--save-session", "saved"], f"error: --save-session: workflow {WORKFLOW} runs on the knowledge base"),
])
def test_session_options_are_refused_in_one_line(
    config: str, tmp_path: Path, gitlab_server: GitLabServer, capsys: pytest.CaptureFixture[str],
    extra: list[str], expected: str,
) -> None:
    assert main(run_argv(config, *extra)) == 2
    err = capsys.readouterr().err
    assert err.startswith(expected) and len(err.splitlines()) == 1
    assert not (tmp_path / "saved").exists() and gitlab_server.requests == []


def test_an_unreadable_mr_is_one_line_before_the_stores_open(
    config: str, tmp_path: Path, gemini_server: GeminiServer, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", WORKFLOW, "--project", PROJECT, "--mr", "999", "--config", config]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: cannot run {WORKFLOW} on {PROJECT} !999: merge request !999 not found in {PROJECT} "
                   "(HTTP 404)\n")
    assert not (tmp_path / "kb").exists() and gemini_server.generate_calls == []
