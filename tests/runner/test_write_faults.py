"""Effectively-once notes when GitLab fails around a write: a POST that GitLab stored but answered with a
5xx, or answered only after the client's timeout (committed then, or later), is found by its marker, never
posted twice; a POST refused before the write is tried again once."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.runner.harness import Service, comment, expect_turns, pipeline_event, reply, seed_gitlab, start_service
from tests.servers import GeminiServer, GitLabServer, MotoServer
from tests.servers.gemini import text_turn

pytestmark = [pytest.mark.podman, pytest.mark.timeout(240)]

NEW_THREAD = r"/merge_requests/7/discussions$"
IN_THREAD = r"/merge_requests/7/discussions/[^/]+/notes$"
UPDATE = r"/merge_requests/7/discussions/[^/]+/notes/\d+$"


@pytest.fixture
def fakes(gitlab_server: GitLabServer, gemini_server: GeminiServer,
          moto_server: MotoServer) -> tuple[GitLabServer, GeminiServer, MotoServer]:
    seed_gitlab(gitlab_server)
    return gitlab_server, gemini_server, moto_server


def running(tmp_path: Path, fakes: Any) -> contextlib.AbstractAsyncContextManager[Service]:
    return start_service(tmp_path, *fakes)


async def analysed(service: Service) -> str:
    """A failed pipeline analysed into one final note; its thread id."""
    expect_turns(service.model, text_turn("## Analysis\nFlaky network."))
    service.publish(pipeline_event())
    await service.wait_for(lambda: len(service.final_notes()) == 1, "the analysis")
    return str(service.discussions()[0]["id"])


@pytest.mark.parametrize("path, method", [(NEW_THREAD, "POST"), (UPDATE, "PUT")],
                         ids=["placeholder-post", "final-update"])
async def test_5xx_after_the_write_leaves_exactly_one_final_note(tmp_path: Path, fakes: Any,
                                                                 path: str, method: str) -> None:
    async with running(tmp_path, fakes) as service:
        service.gitlab.fail_next(1, 502, path=path, method=method, after=True)
        await analysed(service)
        await service.settle()
        assert [n["body"].splitlines()[0] for n in service.bot_notes()] == ["## Analysis"]
        assert len(service.gitlab.requests_to(NEW_THREAD, "POST")) == 1  # the lost answer was looked for


@pytest.mark.parametrize("after", [True, False], ids=["committed-then-hangs", "hangs-then-commits"])
async def test_a_placeholder_post_answered_after_the_timeout_leaves_exactly_one_note(
    tmp_path: Path, fakes: Any, after: bool
) -> None:
    # GitLab commits the POST at once or only after the client gave up (and after a first look for it);
    # either way the answer comes after the client's read timeout.
    async with start_service(tmp_path, *fakes, tweak=_quick_gitlab_timeout) as service:
        service.gitlab.hang_next(hang_s=8.0, path=NEW_THREAD, method="POST", after=after)
        await analysed(service)
        await service.finished()
        assert [n["body"].splitlines()[0] for n in service.bot_notes()] == ["## Analysis"]
        assert len(service.gitlab.requests_to(NEW_THREAD, "POST")) == 1


def _quick_gitlab_timeout(config: dict[str, Any]) -> None:
    config["gitlab"].update(request_timeout_s=3.0, write_settle_s=60.0)


async def test_5xx_before_the_write_is_retried_once(tmp_path: Path, fakes: Any) -> None:
    async with running(tmp_path, fakes) as service:
        service.gitlab.fail_next(1, 503, path=NEW_THREAD, method="POST")
        await analysed(service)
        await service.settle()
        assert len(service.bot_notes()) == 1
        assert len(service.gitlab.requests_to(NEW_THREAD, "POST")) == 2


@pytest.mark.parametrize("text, expected", [("/hummingbird help", "`review-docs`"),
                                            ("/hummingbird nonsense", "Unknown workflow")])
async def test_help_and_error_replies_are_posted_once(tmp_path: Path, fakes: Any, text: str, expected: str) -> None:
    async with running(tmp_path, fakes) as service:
        service.gitlab.fail_next(1, 500, path=IN_THREAD, method="POST", after=True)
        service.publish(comment(service, text))
        await service.wait_for(lambda: any(expected in b for b in service.bodies()), "the reply")
        await service.settle()
        assert len(service.bot_notes()) == 1


async def test_an_answer_to_a_reply_is_posted_once(tmp_path: Path, fakes: Any) -> None:
    async with running(tmp_path, fakes) as service:
        thread = await analysed(service)
        service.gitlab.fail_next(1, 500, path=IN_THREAD, method="POST", after=True)
        expect_turns(service.model, text_turn("It was the network."))
        service.publish(reply(service, thread, "Why?"))
        await service.wait_for(lambda: len(service.final_notes()) == 2, "the answer")
        await service.settle()
        assert [n["body"].splitlines()[0] for n in service.bot_notes()] == ["## Analysis", "It was the network."]


async def test_an_unsaved_session_is_said_and_a_reply_is_told_so(tmp_path: Path, fakes: Any) -> None:
    async with start_service(tmp_path, *fakes, tweak=_missing_bucket) as service:
        thread = await analysed(service)
        await service.wait_for(lambda: "could not be saved" in service.final_notes()[0]["body"], "the unsaved notice")
        assert "Reply to this thread" not in service.final_notes()[0]["body"]
        service.publish(reply(service, thread, "Why?"))
        await service.wait_for(lambda: any("never saved" in b for b in service.bodies()), "the never-saved reply")
        assert not any("expired" in b for b in service.bodies())
        session_id = service.markers()[0].id
        warnings = [json.loads(line) for line in service.log_path.read_text().splitlines()]
        assert any(w["level"] == "warning" and f"session {session_id} not saved" in w["msg"] for w in warnings)


def _missing_bucket(config: dict[str, Any]) -> None:
    config["sessions"]["s3_bucket"] = "missing-bucket"
