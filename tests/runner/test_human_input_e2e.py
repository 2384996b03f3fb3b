"""request_human_input in the running service (moto + fake GitLab + scripted Gemini server + Podman): the
reviewer's "no investigation procedure captured" gap asks in the analysis thread, once; the next learning
run reads what a Developer+ member answered there (never a non-member's text) into its extraction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hummingbird_agent.gitlab.markers import SessionMarker, format_marker
from hummingbird_agent.runner.human_input import QUESTION_MARK
from tests.runner import harness as h
from tests.servers import GeminiServer, GitLabServer, MotoServer

pytestmark = [pytest.mark.podman, pytest.mark.timeout(300)]
EXTRACT, SUMMARY, GAPS = "You turn one resolved incident", "Write a short narrative", "You analyse what information"
ANSWER = "I ran df -h on the runner: /var was full."
ANALYSIS = "## Pipeline analysis\nThe `build` job failed: no space left on device."


def knowledge(system: str, user: str) -> str:
    if system.startswith(EXTRACT):
        return json.dumps({"causes": [{"name": "runner disk full", "description": "/var filled up.",
                                       "confidence": 0.8}]})
    if system.startswith(SUMMARY):
        return "The runner's disk was full."
    if system.startswith(GAPS):
        return json.dumps({"gaps": []})
    raise AssertionError(f"unexpected prompt: {system[:60]!r}")


def configure(tmp_path: Path) -> Any:
    def tweak(config: dict[str, Any]) -> None:
        config["bamboo"] = {"enabled": True, "explore": True, "model": "gemini-test",
                            "graph": {"path": str(tmp_path / "graph")}, "vectors": {"path": str(tmp_path / "qdrant")},
                            "embeddings": {"provider": "hashing", "dimensions": 256}, "max_review_retries": 1}
        config["sandbox"] = {"backend": "podman", "memory_bytes": 512 * 2**20, "workdir_bytes": 64 * 2**20}
        config["workflows"]["bamboo-accumulate"] = {
            "description": "learn", "prompt": str(h.REPO / "workflows" / "bamboo-accumulate.md"),
            "engine": "bamboo-accumulate", "projects": {h.PROJECT: {}}}
    return tweak


def extraction_prompts(model: GeminiServer, since: int) -> list[str]:
    bodies = [c.body for c in model.generate_calls[since:]]
    return [b["contents"][-1]["parts"][0]["text"] for b in bodies
            if b["systemInstruction"]["parts"][0]["text"].startswith(EXTRACT)]


async def test_the_missing_procedure_is_asked_in_the_thread_and_the_answer_learned_next_time(
        tmp_path: Path, gitlab_server: GitLabServer, moto_server: MotoServer) -> None:
    h.seed_gitlab(gitlab_server)
    bot = gitlab_server.bot_user["id"]
    marker = SessionMarker(id="66666666-6666-4666-8666-666666666666", wf="analyze-failures", sha=h.SHA)
    analysis = gitlab_server.add_discussion(h.PROJECT_ID, h.IID, f"{ANALYSIS}\n\n{format_marker(marker)}", bot)
    with GeminiServer() as model:
        model.respond_with(knowledge)
        async with h.start_service(tmp_path, gitlab_server, model, moto_server, tweak=configure(tmp_path)) as service:
            service.publish(h.comment(service, "/hummingbird learn"))
            await service.wait_for(lambda: any(b.startswith("**Learned**") for b in service.bodies()), "learned")
            thread = gitlab_server.discussions[(h.PROJECT_ID, h.IID)][0]
            [question] = [n["body"] for n in thread["notes"] if QUESTION_MARK in n["body"]]
            assert "No investigation procedure was captured" in question
            assert not any("human_input:procedures" in p for p in extraction_prompts(model, 0))

            gitlab_server.add_reply(h.PROJECT_ID, h.IID, analysis["id"], "OUTSIDER-SAYS: cosmic rays", h.OUTSIDER)
            gitlab_server.add_reply(h.PROJECT_ID, h.IID, analysis["id"], ANSWER, h.MEMBER)
            calls = len(model.generate_calls)
            service.publish(h.comment(service, "/hummingbird learn"))
            await service.wait_for(lambda: sum(b.startswith("**Learned**") for b in service.bodies()) == 2,
                                   "learned again")
    assert not model.errors, model.errors
    prompts = extraction_prompts(model, calls)
    fed = [p.split("### human_input:procedures\n", 1)[1] for p in prompts if "### human_input:procedures" in p]
    assert fed and fed[0].startswith(ANSWER) and "OUTSIDER-SAYS" not in fed[0]
    notes = gitlab_server.discussions[(h.PROJECT_ID, h.IID)][0]["notes"]
    assert sum(QUESTION_MARK in n["body"] for n in notes) == 1  # asked once
