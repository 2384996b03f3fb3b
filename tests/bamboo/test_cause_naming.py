"""One cause, one node: the extraction is shown the existing causes, paraphrased names merge, a malformed
answer is asked for once more; and a failure no learned cause fits says so. The model is the real Gemini
adapter talking to the scripted Gemini server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hummingbird_agent.bamboo.analysis import NOTHING_SIMILAR
from hummingbird_agent.bamboo.diagnose.navigator import ReasoningNavigator
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelReplyError
from hummingbird_agent.bamboo.learn.accumulator import KnowledgeAccumulator, Stores
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry
from hummingbird_agent.runner.bamboo_executor import diagnosis_note
from tests.bamboo.kb import INCIDENT_A, INCIDENT_B, LIKE_NEITHER, view
from tests.servers import GeminiServer
from tests.servers.gemini import text_turn

EXTRACT = "You turn one resolved incident"
DISK = IncidentInput("The runner ran out of disk again; pruned the images.",
                     {"project": "g/app", "job": "test", "stage": "test", "status": "failed", "pipeline": 300},
                     task_logs={"test": "$ make test\nOSError: [Errno 28] No space left on device\n"})


def parts(llm: JsonLLM, stores: Stores) -> tuple[KnowledgeAccumulator, ReasoningNavigator]:
    extractor = KnowledgeGraphExtractor(default_registry().create("gitlab_ci", StrategyDeps(llm)))
    return (KnowledgeAccumulator(extractor, KnowledgeReviewer(llm), llm, stores),
            ReasoningNavigator(extractor, llm, stores))


def section(body: dict[str, Any], title: str) -> str:
    user = body["contents"][-1]["parts"][0]["text"]
    return user.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def facts(body: dict[str, Any], kind: str) -> list[str]:
    block = section(body, "Facts extracted by code")
    return [line[len(f"- {kind}: "):] for line in block.splitlines() if line.startswith(f"- {kind}: ")]


def naming(cause: str) -> Any:
    """An extraction answer naming `cause` for every symptom of the incident, in the incident's project."""
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        return text_turn(json.dumps({"causes": [{"name": cause, "confidence": 0.9, "symptoms": facts(body, "Symptom"),
                                                 "features": [f for f in facts(body, "Task_Feature")
                                                              if f.startswith("project=")]}],
                                     "procedures": [{"name": "read the job log", "tools": ["get_job_log"],
                                                     "cause": cause}]}))
    return answer


def learning(cause: str) -> tuple[Any, ...]:
    """The three calls of learning one incident: extraction, approving review, summary."""
    return (naming(cause), text_turn(json.dumps({"approved": True, "confidence": 0.9})), text_turn("A summary."))


async def cause_rows(stores: Stores) -> dict[str, int]:
    return {r.name: r.frequency for r in await view(stores).graph.nodes("Cause")}


async def test_paraphrases_of_one_cause_become_one_node_and_a_different_number_stays_apart(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    accumulator, _ = parts(llm, stores)
    gemini_server.script(*learning("Runner disk full"), *learning("Root cause: the RUNNER DISK FULL."),
                         *learning("disk full on runner"), *learning("exit code 137 in make test"),
                         *learning("exit code 1 in make test"))
    for n, incident in enumerate((INCIDENT_B, DISK, INCIDENT_B, INCIDENT_A, DISK)):
        await accumulator.process(IncidentInput(incident.email_text, {**incident.task_data, "pipeline": 900 + n},
                                                task_logs=incident.task_logs))
    assert await cause_rows(stores) == {"runner disk full": 3, "exit code 137 in make test": 1,
                                        "exit code 1 in make test": 1}


async def test_paraphrases_inside_one_unstored_batch_merge_too(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    # `bamboo populate` processes a batch before storing it: the later paraphrase has no stored cause to meet.
    accumulator, _ = parts(llm, stores)
    gemini_server.script(*learning("Runner disk full"), *learning("disk full on runner"))
    batch = [await accumulator.process(IncidentInput(i.email_text, {**i.task_data, "pipeline": 950 + n},
                                                     task_logs=i.task_logs), dry_run=True)
             for n, i in enumerate((INCIDENT_B, DISK))]
    await accumulator.store(batch)
    assert await cause_rows(stores) == {"runner disk full": 2}


async def test_the_extraction_is_shown_the_closest_existing_causes_with_structured_output(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    accumulator, _ = parts(llm, stores)
    gemini_server.script(*learning("runner disk full"), *learning("npm registry mirror unreachable"),
                         *learning("runner disk full"))
    for incident in (INCIDENT_B, INCIDENT_A, DISK):
        await accumulator.process(incident)
    extractions = [c.body for c in gemini_server.generate_calls
                   if c.body["systemInstruction"]["parts"][0]["text"].startswith(EXTRACT)]
    assert len(extractions) == 3
    first, last = extractions[0], extractions[-1]
    assert section(first, "Existing causes").strip() == "(none yet)"
    shown = section(last, "Existing causes").strip().splitlines()
    assert shown[0].startswith("- runner disk full")  # the same error line comes first
    assert any(line.startswith("- npm registry mirror unreachable") for line in shown)  # same project
    config = last["generationConfig"]
    assert config["responseMimeType"] == "application/json" and config["temperature"] == 0
    assert "causes" in config["responseJsonSchema"]["properties"]
    assert await cause_rows(stores) == {"runner disk full": 2, "npm registry mirror unreachable": 1}


async def test_a_malformed_answer_is_asked_once_more_and_a_second_one_fails_the_incident(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    accumulator, _ = parts(llm, stores)
    review, summary = learning("x")[1:]
    gemini_server.script(text_turn("Sure! The cause is the disk."), naming("runner disk full"), review, summary)
    await accumulator.process(INCIDENT_B)
    assert await cause_rows(stores) == {"runner disk full": 1}
    assert len(gemini_server.generate_calls) == 4
    gemini_server.script(text_turn("no JSON here"), text_turn("[1, 2]"))
    with pytest.raises(ModelReplyError):
        await accumulator.process(DISK)
    assert await cause_rows(stores) == {"runner disk full": 1}
    assert len(gemini_server.generate_calls) == 6


async def test_a_failure_no_learned_cause_fits_says_so_in_the_diagnosis_note(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    accumulator, navigator = parts(llm, stores)
    gemini_server.script(*learning("npm registry mirror unreachable"), *learning("runner disk full"))
    await accumulator.process(INCIDENT_A)
    await accumulator.process(INCIDENT_B)
    # Clue extraction names nothing; the model then guesses the best-ranked known cause anyway.
    gemini_server.script(text_turn("{}"), text_turn(json.dumps(
        {"root_cause": "runner disk full", "confidence": 0.6, "explanation": "Maybe the disk."})),
        text_turn("Hello."))
    result = await navigator.analyze(LIKE_NEITHER)
    assert not result.known
    assert all(c.score < 0.5 for c in result.candidates)
    note = diagnosis_note(result, "https://gitlab.example", [])
    assert f"{NOTHING_SIMILAR}." in note and result.explanation.startswith(NOTHING_SIMILAR)



@pytest.mark.parametrize(("first", "second", "expected"), [
    # No word in common and names that embed apart: only the graph (the same error line, task and log) says so.
    (("runner disk full", INCIDENT_B), ("storage exhausted on the build host", DISK), {"runner disk full": 2}),
    # Alike names, different failures of one project: what fits is only the project.
    (("npm registry mirror unreachable", INCIDENT_A), ("npm registry cache disk full", INCIDENT_B),
     {"npm registry mirror unreachable": 1, "npm registry cache disk full": 1}),
])
async def test_a_new_name_joins_the_cause_its_failure_fits_and_a_different_failure_stays_apart(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores, first: tuple[str, IncidentInput],
        second: tuple[str, IncidentInput], expected: dict[str, int]) -> None:
    accumulator, _ = parts(llm, stores)
    gemini_server.script(*learning(first[0]), *learning(second[0]))
    await accumulator.process(first[1])
    await accumulator.process(second[1])
    assert await cause_rows(stores) == expected
