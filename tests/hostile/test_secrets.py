"""Secrets in what the service writes, end to end: a secret the model repeats, in every form JSON and repr give it,
reaches no note, log line, transcript or saved session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.runner.harness import expect_turns, pipeline_event, seed_gitlab, start_service
from tests.runner.test_service_audit import ANALYSIS
from tests.servers import GeminiServer, GitLabServer, MotoServer
from tests.servers.gemini import function_call_turn, text_turn

pytestmark = [pytest.mark.podman, pytest.mark.timeout(240)]


# A webhook secret the SNS path never checks, with the characters JSON and repr escape.
QUOTED = 'hook"se\\cret\'-42'


def written_forms(secret: str) -> list[str]:
    return [secret, json.dumps(secret)[1:-1], repr(secret)[1:-1], json.dumps(json.dumps(secret))[1:-1]]


async def test_a_secret_with_quotes_and_backslashes_is_in_no_note_log_transcript_or_session(
    tmp_path: Path, gitlab_server: GitLabServer, gemini_server: GeminiServer, moto_server: MotoServer
) -> None:
    seed_gitlab(gitlab_server)
    async with start_service(tmp_path, gitlab_server, gemini_server, moto_server,
                             secrets={"GITLAB_WEBHOOK_SECRET": QUOTED}) as service:
        # The model repeats the secret in a tool call (a shell comment) and in its answer.
        expect_turns(service.model, function_call_turn("sandbox_exec", {"command": f"true # {QUOTED}"}),
                     text_turn(f"{ANALYSIS}\nThe hook secret is {QUOTED}."))
        service.publish(pipeline_event())
        await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis note")
        [marker] = service.markers()
        await service.wait_for(lambda: f"sessions/{marker.id}/context.json" in service.s3_objects(), "session saved")
        objects = {key: body.decode() for key, body in service.s3_objects().items() if not key.endswith(".gz")}
        texts = {"note": service.bodies()[0], "log": service.log_path.read_text(), **objects}
        for where, text in texts.items():
            assert not [form for form in written_forms(QUOTED) if form in text], where
        assert "The hook secret is [redacted]." in texts["note"]
        assert "[redacted]" in texts[f"sessions/{marker.id}/transcript.md"]
        assert "[redacted]" in json.dumps(json.loads(texts[f"sessions/{marker.id}/context.json"]))
