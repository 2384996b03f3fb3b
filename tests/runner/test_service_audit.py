"""Auditable notes through the whole service: footer, "What I looked at", data gaps (a source skipped for a
missing credential), stop reasons with a correlation id, and no secret anywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.runner.harness import SECRETS, Service, expect_turns, pipeline_event, seed_gitlab, start_service
from tests.servers import GeminiServer, GitLabServer, MotoServer
from tests.servers.base import HTTPError
from tests.servers.gemini import function_call_turn, text_turn

pytestmark = [pytest.mark.podman, pytest.mark.timeout(240)]

ANALYSIS = "## Pipeline analysis\nThe build failed: `frob` is missing."


def no_read_token(config: dict[str, Any]) -> None:
    for workflow in config["workflows"].values():
        workflow["data_sources"] = {"gitlab": {"token_env": "HB_UNSET_READ_TOKEN"}}


def assert_no_secrets(service: Service) -> None:
    texts = [*service.bodies(), service.log_path.read_text()]
    texts += [json.dumps(c.body) for c in service.model.generate_calls]
    for secret in SECRETS.values():
        assert all(secret not in text for text in texts), secret


async def test_note_lists_calls_gaps_and_footer(tmp_path: Path, gitlab_server: GitLabServer,
                                               gemini_server: GeminiServer, moto_server: MotoServer) -> None:
    seed_gitlab(gitlab_server)
    async with start_service(tmp_path, gitlab_server, gemini_server, moto_server, tweak=no_read_token) as service:
        expect_turns(service.model,
                     function_call_turn("sandbox_exec", {"command": "echo 'frob is missing' > evidence.txt"}),
                     function_call_turn("gitlab_get_job_log", {"project": "group/project", "job_id": 12}),
                     text_turn(ANALYSIS))
        service.publish(pipeline_event())
        await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis note")
        body = service.final_notes()[0]["body"]
        [marker] = service.markers()
        assert body.startswith(ANALYSIS + "\n\n<details><summary>What I looked at</summary>")
        looked_at = body[body.index("<details>"):body.index("</details>")]
        calls = [line for line in looked_at.splitlines() if re.match(r"\d+\. ", line)]
        assert calls[0].startswith("1. `sandbox_exec` command=`echo 'frob is missing' > evidence.txt` → ")
        assert calls[1].startswith("2. `gitlab_get_job_log` project=`group/project` job_id=`12` → error `unknown_tool`")
        gaps = looked_at[looked_at.index("**Data gaps**"):]
        assert "data source gitlab is unavailable: env var HB_UNSET_READ_TOKEN (GitLab read token) is unset" in gaps
        footer = body[body.index("</details>"):]
        for part in ("`analyze-failures`", "· gemini/", "3/6 iterations", f"session `{marker.id}`",
                     "reply to continue", "`/hummingbird help`"):
            assert part in footer
        assert footer.index("`/hummingbird help`") < footer.index("Reply to this thread")
        # The model was told, so it does not guess what the missing source would have said.
        system = service.model.generate_calls[0].body["systemInstruction"]["parts"][0]["text"]
        assert "## Unavailable data sources" in system and "HB_UNSET_READ_TOKEN" in system
        assert_no_secrets(service)


def refused(_body: dict[str, Any]) -> dict[str, Any]:
    raise HTTPError(400, "Request contains an invalid argument.")


async def test_stopped_runs_say_why_with_a_correlation_id(tmp_path: Path, gitlab_server: GitLabServer,
                                                          gemini_server: GeminiServer, moto_server: MotoServer) -> None:
    seed_gitlab(gitlab_server)
    async with start_service(tmp_path, gitlab_server, gemini_server, moto_server) as service:
        expect_turns(service.model, refused)
        service.publish(pipeline_event())
        await service.wait_for(lambda: len(service.final_notes()) == 1, "the failure note")
        failed = service.final_notes()[0]["body"]
        # The error's class (the adapter's refusal class), never its message.
        assert re.search(r"Hummingbird stopped: the model call failed \((\w+)\)\.", failed)
        correlation = re.search(r"Correlation id: `([0-9a-f]{12})`", failed)
        assert correlation is not None and correlation.group(1) in service.log_path.read_text()
        assert "Traceback" not in failed and "invalid argument" not in failed

        expect_turns(service.model, *[function_call_turn("sandbox_exec", {"command": f"echo {i}"}) for i in range(6)])
        service.publish(pipeline_event(pipeline_id=502, sha="b" * 40))
        await service.wait_for(lambda: len(service.final_notes()) == 2, "the budget note")
        budget = service.final_notes()[1]["body"]
        assert "Hummingbird stopped: the iteration budget ran out (6 of 6 iterations used)." in budget
        assert re.search(r"Correlation id: `[0-9a-f]{12}`", budget)
        assert budget.count("`sandbox_exec`") == 6 and "6/6 iterations" in budget
        assert "6. `sandbox_exec` command=`echo 5` → error `tools_disabled`" in budget
        assert_no_secrets(service)
