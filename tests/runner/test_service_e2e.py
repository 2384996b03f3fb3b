"""The conversation layer end to end, driven by webhooks through SNS/SQS on moto, with the fake GitLab,
a scripted model server and real Podman sandboxes (seed §10.3-10.7, §11); the pipeline -> note and
reply -> resume runs are repeated on each provider (Gemini, Anthropic, OpenAI-compatible)."""

from __future__ import annotations

import json

import pytest

from tests.runner.harness import (
    IID,
    OUTSIDER,
    PROJECT,
    SECRETS,
    SHA,
    Service,
    comment,
    expect_turns,
    merge_request_event,
    pipeline_event,
    reply,
)
from tests.servers.gemini import function_call_turn, text_turn
from tests.servers.model_common import PROVIDERS

pytestmark = [pytest.mark.podman, pytest.mark.timeout(240)]

ANALYSIS = "## Pipeline analysis\nThe `unit-tests` job failed: undefined reference to `frob`."


def analysis_turns() -> list[dict[str, object]]:
    return [
        function_call_turn("gitlab_get_mr_details", {"project": PROJECT, "mr_iid": IID}),
        function_call_turn("sandbox_exec", {"command": "echo 'frob is missing' > evidence.txt"}),
        text_turn(ANALYSIS),
    ]


@pytest.mark.parametrize("service", PROVIDERS, indirect=True)
async def test_failed_pipeline_gets_one_analysis_note_and_a_saved_session(service: Service) -> None:
    expect_turns(service.model, *analysis_turns())
    service.publish(pipeline_event())
    await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis note")
    [note] = service.final_notes()
    assert note["body"].startswith(ANALYSIS)
    assert "Reply to this thread" in note["body"]
    [marker] = service.markers()
    assert (marker.wf, marker.sha) == ("analyze-failures", SHA)
    first_request = service.model.generate_calls[0].body
    task = json.loads(first_request["contents"][0]["parts"][0]["text"])
    assert task["project"] == PROJECT and task["iid"] == IID and task["pipeline_id"] == 501
    mr_details = service.model.generate_calls[1].body["contents"][2]["parts"][0]["functionResponse"]
    assert mr_details["response"]["result"]["title"] == "Add frob"
    await service.wait_for(lambda: f"sessions/{marker.id}/context.json" in service.s3_objects(), "session saved")
    objects = service.s3_objects()
    assert {f"sessions/{marker.id}/{n}" for n in ("context.json", "transcript.md", "sandbox.tar.gz")} <= set(objects)
    _assert_no_secrets(service, objects)


@pytest.mark.parametrize("service", PROVIDERS, indirect=True)
async def test_reply_resumes_with_history_and_files_then_expires(service: Service) -> None:
    expect_turns(service.model, *analysis_turns())
    service.publish(pipeline_event())
    await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis note")
    [marker] = service.markers()
    await service.wait_for(lambda: f"sessions/{marker.id}/context.json" in service.s3_objects(), "session saved")
    thread = service.discussions()[0]["id"]

    expect_turns(service.model, function_call_turn("sandbox_exec", {"command": "cat evidence.txt"}),
                 text_turn("The evidence file says frob is missing."))
    service.publish(reply(service, thread, "What did you find in the sandbox?"))
    await service.wait_for(lambda: len(service.final_notes()) == 2, "the follow-up answer")
    answer = service.final_notes()[1]["body"]
    assert answer.startswith("The evidence file says frob is missing.")
    assert "Reply to this thread" not in answer
    resumed = service.model.generate_calls[3].body
    assert resumed["contents"][-1]["parts"][0]["text"] == "What did you find in the sandbox?"
    assert any(p.get("text") == ANALYSIS for c in resumed["contents"] for p in c["parts"])
    exec_result = service.model.generate_calls[4].body["contents"][-1]["parts"][0]["functionResponse"]
    assert exec_result["response"]["result"]["stdout"] == "frob is missing\n"

    context_key = f"sessions/{marker.id}/context.json"
    await service.wait_for(lambda: b"frob is missing." in service.s3_objects().get(context_key, b""),
                           "the resumed session saved")
    s3 = service.moto.client("s3")
    for key in list(service.s3_objects()):
        s3.delete_object(Bucket="sessions", Key=key)
    s3.close()
    service.publish(reply(service, thread, "And now?"))
    await service.wait_for(lambda: any("expired" in b for b in service.bodies()), "the expired-session reply")
    assert len(service.model.generate_calls) == 5  # no cold start


async def test_merge_request_review_draft_and_sha_dedup(service: Service) -> None:
    service.publish(merge_request_event(draft=True))
    await service.settle()
    assert service.bodies() == []
    expect_turns(service.model, text_turn("## Review\nLooks good."))
    service.publish(merge_request_event(action="open"))
    await service.wait_for(lambda: len(service.final_notes()) == 1, "the review note")
    assert service.final_notes()[0]["body"].startswith("## Review")
    service.publish(merge_request_event(action="update"))  # a title edit: same SHA
    await service.settle()
    assert len(service.bot_notes()) == 1


async def test_same_webhook_twice_gives_one_note(service: Service) -> None:
    expect_turns(service.model, *analysis_turns())
    body = pipeline_event()
    service.publish(body)
    service.publish(body)
    await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis note")
    await service.settle()
    assert len(service.bot_notes()) == 1
    assert len(service.model.generate_calls) == 3


async def test_already_analysed_sha_and_max_runs_are_skipped(service: Service) -> None:
    expect_turns(service.model, *analysis_turns())
    service.publish(pipeline_event(pipeline_id=601))
    await service.wait_for(lambda: len(service.final_notes()) == 1, "first analysis")
    service.publish(pipeline_event(pipeline_id=602))  # a retry on the same SHA
    await service.settle()
    assert len(service.bot_notes()) == 1
    expect_turns(service.model, *analysis_turns())
    service.publish(pipeline_event(pipeline_id=603, sha="b" * 40))
    await service.wait_for(lambda: len(service.final_notes()) == 2, "second analysis (new SHA)")
    service.publish(pipeline_event(pipeline_id=604, sha="c" * 40))  # max_runs_per_mr is 2
    await service.settle()
    assert len(service.bot_notes()) == 2


async def test_commands_help_prefix_errors_and_access(service: Service) -> None:
    service.publish(comment(service, "/hummingbird help"))
    await service.wait_for(lambda: any("`review-docs`" in b for b in service.bodies()), "help reply")
    service.publish(comment(service, "/hummingbird rev"))
    await service.wait_for(lambda: any("matches several workflows" in b for b in service.bodies()), "ambiguous")
    service.publish(comment(service, "/hummingbird nonsense"))
    await service.wait_for(lambda: any("Unknown workflow `nonsense`" in b for b in service.bodies()), "unknown")
    # Another project's workflow is neither offered nor a match; named exactly, it is not enabled here.
    assert not any("review-other" in b for b in service.bodies())
    service.publish(comment(service, "/hummingbird review-other"))
    await service.wait_for(lambda: any("`review-other` is not enabled" in b for b in service.bodies()), "other's")
    service.publish(comment(service, "/hummingbird ana", author_id=OUTSIDER))
    await service.wait_for(lambda: any("Developer access" in b for b in service.bodies()), "access denied")
    assert not service.markers()  # simple replies carry no session marker
    for _ in range(3):  # more attempts by the same non-member within the hour: logged, not answered
        service.publish(comment(service, "/hummingbird ana", author_id=OUTSIDER))
    await service.wait_for(lambda: service.log_path.read_text().count("no second note") == 3, "3 silent refusals")
    assert sum("Developer access" in b for b in service.bodies()) == 1

    expect_turns(service.model, *analysis_turns())
    service.publish(comment(service, "/hummingbird ana please look at unit-tests"))
    await service.wait_for(lambda: any(b.startswith(ANALYSIS) for b in service.bodies()), "the command's analysis")
    [marker] = service.markers()  # the placeholder was updated in place
    assert marker.wf == "analyze-failures" and marker.sha is None  # commands are not SHA-deduplicated
    assert marker.at == SHA  # but record the commit they looked at, which learning reads
    task = json.loads(service.model.generate_calls[0].body["contents"][0]["parts"][0]["text"])
    assert task["trigger"] == "command" and task["request"] == "please look at unit-tests"



def _assert_no_secrets(service: Service, objects: dict[str, bytes]) -> None:
    secrets = list(SECRETS.values())
    texts = [*service.bodies(), *(o.decode("latin-1") for o in objects.values()),
             service.log_path.read_text(), *(json.dumps(c.body) for c in service.model.generate_calls)]
    for secret in secrets:
        assert all(secret not in text for text in texts), secret
