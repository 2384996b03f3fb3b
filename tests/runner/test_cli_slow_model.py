"""`run` with a slow or stalled model: the verdicts are printed before the first model call (a slow model delays
only its explanation), and a self-hosted model that goes silent is cut, not retried, and the note and the terminal
say so in one line each."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from hummingbird_agent.cli import build_parser
from hummingbird_agent.cli.run import build_request, execute, report
from hummingbird_agent.config.loading import LoadedConfig, load_config
from hummingbird_agent.models.openai_compat import OpenAIModel, OpenAISettings
from hummingbird_agent.models.retry import RetryPolicy
from hummingbird_agent.models.stream import StreamLimits
from tests.runner.harness import IID, MEMBER, PROJECT, REPO, seed_gitlab
from tests.servers import GitLabServer, text_turn
from tests.servers.model_common import Pace
from tests.servers.openai import OpenAIServer
from tests.triage.conftest import failing_log
from tests.triage.world import Attempt, CiWorld, sha_of

ERROR = "AssertionError: parse('1.2') returned None"


def pre_existing_failure(gitlab: GitLabServer) -> int:
    """An MR whose failed check fails on main too; returns the MR pipeline's id (bench/llamacpp_run.py too)."""
    seed_gitlab(gitlab)
    world, base = CiWorld(gitlab), sha_of("base")
    world.pipeline(base, [Attempt("unit-tests", trace=failing_log("test_parse", ERROR, run=8))])
    mr = world.mr(IID, base_sha=base, author_id=MEMBER)
    return world.pipeline(mr["sha"], [Attempt("unit-tests", trace=failing_log("test_parse", ERROR, run=2))],
                          ref="feature")


def _loaded(tmp_path: Path, gitlab: GitLabServer, model: OpenAIServer) -> LoadedConfig:
    config = {
        "gitlab": {"url": gitlab.url, "token_env": "HB_BOT_TOKEN"},
        # A self-hosted OpenAI-compatible server (not api.openai.com): a timed-out generation is not retried.
        "model": {"provider": "openai", "base_url": f"{model.url}/v1", "name": "local-model"},
        "workflows": {"analyze-failures": {
            "description": "analyse", "prompt": str(REPO / "workflows/analyze-failures.md"), "require_data": True,
            "projects": {PROJECT: {}}, "triage": {"enabled": True},
            "data_sources": {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}}}},
    }
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    return load_config(tmp_path / "config.yaml", {"GITLAB_READ_TOKEN": gitlab.read_token})


async def _run(loaded: LoadedConfig, pipeline: int, model: OpenAIModel) -> tuple[Any, str, str]:
    args = build_parser().parse_args(["run", "analyze-failures", "--project", PROJECT, "--mr", str(IID),
                                      "--pipeline", str(pipeline)])
    out, err = io.StringIO(), io.StringIO()
    outcome = await execute(loaded, build_request(args), model, out=out, err=err)
    return outcome, out.getvalue(), err.getvalue()


def _model(server: OpenAIServer, silence_s: float = 60.0) -> OpenAIModel:
    settings = OpenAISettings(api_key=server.api_key, base_url=f"{server.url}/v1", self_hosted=True)
    return OpenAIModel(settings, RetryPolicy(retries=3, base_s=0.01), StreamLimits(first_event_s=60.0,
                                                                                   silence_s=silence_s))


async def test_the_verdicts_are_printed_before_the_first_model_call(
        tmp_path: Path, gitlab_server: GitLabServer, openai_server: OpenAIServer) -> None:
    pipeline = pre_existing_failure(gitlab_server)
    printed_before: list[str] = []
    err_stream: list[io.StringIO] = []

    def answer(view: dict[str, Any]) -> dict[str, Any]:
        printed_before.append(err_stream[0].getvalue())  # what the terminal showed when the model was asked
        return text_turn("`unit-tests` fails on main too.")

    openai_server.script(answer)
    args = build_parser().parse_args(["run", "analyze-failures", "--project", PROJECT, "--mr", str(IID),
                                      "--pipeline", str(pipeline)])
    out, err = io.StringIO(), io.StringIO()
    err_stream.append(err)
    loaded = _loaded(tmp_path, gitlab_server, openai_server)
    outcome = await execute(loaded, build_request(args), _model(openai_server), out=out, err=err)
    assert report(outcome, io.StringIO()) == 0
    [before] = printed_before
    assert before.startswith("**Triage:** 1 failed check, none looks caused by this MR")
    assert "🟠 pre-existing" in before and "the model's explanation follows" in before
    assert "iteration 1/" not in before  # nothing of the model's yet


async def test_a_silent_self_hosted_model_is_cut_once_and_the_note_says_so(
        tmp_path: Path, gitlab_server: GitLabServer, openai_server: OpenAIServer) -> None:
    pipeline = pre_existing_failure(gitlab_server)
    openai_server.pace = Pace(stall_after=3, stall_s=5.0)
    openai_server.script(text_turn("The unit tests fail on main as well, " * 20))
    loaded = _loaded(tmp_path, gitlab_server, openai_server)
    outcome, note, _ = await _run(loaded, pipeline, _model(openai_server, silence_s=1.0))
    terminal = io.StringIO()
    assert report(outcome, terminal) == 1
    assert len(openai_server.generate_calls) == 1  # not started again from zero
    said = ("the model went silent: no output for 1 s after 28 characters; stopped and not retried: a self-hosted "
            "server would start the generation again from zero")
    assert terminal.getvalue() == f"error: the run ended without an answer: openai: {said}\n"
    assert note.startswith("**Triage:**")  # the verdicts stand
    assert f"**Hummingbird stopped: the model call timed out: openai: {said}.**" in note
