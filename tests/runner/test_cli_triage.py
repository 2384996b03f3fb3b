"""`run` of a workflow with triage starts from the verdicts, as the service does: the printed note opens with
them and the model's first message carries them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent.cli import main
from tests.runner.harness import IID, MEMBER, PROJECT, REPO, seed_gitlab
from tests.servers import GitLabServer, text_turn
from tests.servers.model_common import model_section
from tests.servers.openai import OpenAIServer
from tests.triage.conftest import failing_log
from tests.triage.world import Attempt, CiWorld, sha_of

EXPLANATION = "`unit-tests` fails on main too: nothing to fix here."


def test_run_prints_the_verdicts_before_the_models_explanation(
    tmp_path: Path, gitlab_server: GitLabServer, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed_gitlab(gitlab_server)
    world, base = CiWorld(gitlab_server), sha_of("base")
    error = "AssertionError: parse('1.2') returned None"
    world.pipeline(base, [Attempt("unit-tests", trace=failing_log("test_parse", error, run=8))])
    mr = world.mr(IID, base_sha=base, author_id=MEMBER)
    pipeline = world.pipeline(mr["sha"], [Attempt("unit-tests", trace=failing_log("test_parse", error, run=2))],
                              ref="feature")
    config = {
        "gitlab": {"url": gitlab_server.url, "token_env": "HB_BOT_TOKEN"},
        "model": model_section("openai", openai_server, "OPENAI_KEY"),
        "workflows": {"analyze-failures": {
            "description": "analyse", "prompt": str(REPO / "workflows/analyze-failures.md"), "model": "gpt-test",
            "require_data": True, "projects": {PROJECT: {}}, "triage": {"enabled": True},
            "data_sources": {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}}}},
    }
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    openai_server.script(text_turn(EXPLANATION))
    monkeypatch.setenv("OPENAI_KEY", openai_server.api_key or "")
    monkeypatch.setenv("GITLAB_READ_TOKEN", gitlab_server.read_token)
    argv = ["run", "analyze-failures", "--project", PROJECT, "--mr", str(IID), "--pipeline", str(pipeline),
            "--config", str(tmp_path / "config.yaml")]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("**Triage:** 1 failed check, none looks caused by this MR: 1 already failing on `main`")
    assert printed.index("🟠 pre-existing") < printed.index(EXPLANATION)
    # An answer from the verdicts is not an answer from no data: one model call, no nudge to read more.
    [call] = openai_server.generate_calls
    task = json.loads(call.body["contents"][0]["parts"][0]["text"])  # the fake's Gemini-shaped view
    assert task["triage"]["checks"][0]["verdict"] == "pre-existing"
