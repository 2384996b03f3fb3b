"""Conversation-layer edge cases: internal notes, auto-resolve, S3 outage, oversized results, bad orders."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent.errors import PermanentError
from hummingbird_agent.runner.work_order import WorkOrder
from tests.runner.harness import (
    PROJECT,
    REPO,
    Service,
    comment,
    expect_turns,
    pipeline_event,
    seed_gitlab,
    start_service,
)
from tests.servers import GeminiServer, GitLabServer, MotoServer
from tests.servers.gemini import text_turn

pytestmark = [pytest.mark.podman, pytest.mark.timeout(240)]


@pytest.fixture
def fakes(gitlab_server: GitLabServer, gemini_server: GeminiServer,
          moto_server: MotoServer) -> tuple[GitLabServer, GeminiServer, MotoServer]:
    seed_gitlab(gitlab_server)
    return gitlab_server, gemini_server, moto_server


def running(tmp_path: Path, fakes: Any, **kwargs: Any) -> contextlib.AbstractAsyncContextManager[Service]:
    return start_service(tmp_path, *fakes, **kwargs)


async def test_knowledge_base_commands_say_the_knowledge_base_is_off(tmp_path: Path, fakes: Any) -> None:
    """config.yaml as shipped: the bamboo workflows list the project but `bamboo.enabled` is false."""
    def tweak(config: dict[str, Any]) -> None:
        config["workflows"]["bamboo-accumulate"] = {
            "description": "Learn", "prompt": str(REPO / "workflows/bamboo-accumulate.md"),
            "engine": "bamboo-accumulate", "projects": {PROJECT: {}}}
        config["workflows"]["review-docs"]["projects"] = {"group/other": {}}

    async with running(tmp_path, fakes, tweak=tweak) as service:
        service.publish(comment(service, "/hummingbird learn it was the cache"))
        await service.wait_for(lambda: len(service.bodies()) == 1, "the reply")
        assert "`bamboo-accumulate` runs on the knowledge base, which is turned off" in service.bodies()[0]
        service.publish(comment(service, "/hummingbird review-docs"))  # an agent workflow of another project
        await service.wait_for(lambda: len(service.bodies()) == 2, "the second reply")
        assert "The workflow `review-docs` is not enabled for this project." in service.bodies()[1]


async def test_internal_notes_and_auto_resolve(tmp_path: Path, fakes: Any) -> None:
    async with running(tmp_path, fakes, project={"internal_notes": True}) as service:
        expect_turns(service.model, text_turn("## Analysis\nFlaky network."))
        service.publish(pipeline_event())
        await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis")
        assert service.final_notes()[0]["internal"] is True
        # A command in a public thread: the answer goes to a new internal thread, never into the public one.
        public = comment(service, "/hummingbird ana")
        expect_turns(service.model, text_turn("## Analysis\nStill flaky."))
        service.publish(public)
        await service.wait_for(lambda: len(service.final_notes()) == 2, "the command's answer")
        threads = service.discussions()
        public_thread = next(d for d in threads if d["id"] == public["object_attributes"]["discussion_id"])
        assert len(public_thread["notes"]) == 1
        assert all(n["internal"] for n in service.final_notes())
        service.publish(pipeline_event(status="success", pipeline_id=900))
        await service.wait_for(lambda: all(n["resolved"] for n in service.final_notes()), "auto-resolve")


async def test_session_save_failure_still_posts_the_note(tmp_path: Path, fakes: Any) -> None:
    def no_bucket(config: dict[str, Any]) -> None:
        config["sessions"]["s3_bucket"] = "missing-bucket"

    async with running(tmp_path, fakes, tweak=no_bucket) as service:
        expect_turns(service.model, text_turn("## Analysis\nDone."))
        service.publish(pipeline_event())
        await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis")
        await service.wait_for(lambda: "not saved" in service.log_path.read_text(), "the save failure log")
        assert service.final_notes()[0]["body"].startswith("## Analysis\nDone.")



@pytest.mark.parametrize("session_id", ["../../etc/passwd", "0b6c3d1e-2f4a-4b5c-8d6e-7f8091a2b3c4/..", ""])
def test_work_orders_with_bad_session_ids_are_refused(session_id: str) -> None:
    order = {"kind": "resume_session", "session_id": session_id, "workflow": "w", "trigger": "reply",
             "project_id": 1, "project": "g/p", "mr_iid": 1}
    with pytest.raises(PermanentError, match="session_id"):
        WorkOrder.from_json({"work_order": order})


async def test_action_none_posts_nothing_and_keeps_the_result_in_log_and_session(tmp_path: Path, fakes: Any) -> None:
    def silent(config: dict[str, Any]) -> None:
        config["workflows"]["analyze-failures"]["action"] = "none"

    async with running(tmp_path, fakes, tweak=silent) as service:
        expect_turns(service.model, text_turn("## Analysis\nQuietly done."))
        service.publish(pipeline_event())
        await service.wait_for(lambda: any(k.endswith("context.json") for k in service.s3_objects()), "the session")
        service.publish(pipeline_event())  # a duplicate: the saved session is the run's effect
        await service.settle()
        assert service.bot_notes() == []
        assert "Quietly done." in service.log_path.read_text()
        assert len(service.model.generate_calls) == 1
