"""The whole-log vector: the accumulator stores one per incident (the vector only, never the log's text),
and the diagnosis ranks a cause whose past incident's whole log is like the new failure's above one whose
incident shares only the excerpt."""

from __future__ import annotations

import json
import re

import pytest

from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.retrieval.log_vector import LOG_SECTION, log_scores, log_text
from hummingbird_agent.bamboo.strategies.base import IncidentInput
from tests.bamboo.fakes import EXTRACT, SUMMARY, approving, facts_of
from tests.bamboo.kb import open_stores, parts
from tests.servers import GeminiServer

# Both causes end their job the same way; what differs is what the job did before (all "info" lines,
# which no excerpt keeps).
ENDING = "$ make check\nmake: *** [check] Error 2\nERROR: Job failed: exit code 2\n"
MIGRATIONS = "".join(f"info: applied migration {i:03d}_create_table_{name}\n"
                     for i, name in enumerate(("users", "orders", "invoices", "payments", "audit_log")))
ASSETS = "".join(f"info: bundled asset chunk {name}.js in {i}0 ms\n"
                 for i, name in enumerate(("vendor", "runtime", "dashboard", "charts", "settings")))
TASK = {"project": "g/app", "job": "check", "status": "failed"}


def rule(system: str, user: str) -> str:
    if system.startswith(EXTRACT):
        said = re.search(r"Cause: (.+)", user)
        if said is None:  # a diagnosis's clue extraction: no discussion, no cause
            return "{}"
        return json.dumps({"causes": [{"name": said.group(1), "description": said.group(1), "confidence": 0.8,
                                       "symptoms": facts_of(user, "Symptom"),
                                       "features": facts_of(user, "Task_Feature")}],
                           "procedures": [{"name": "read the job log", "tools": ["get_job_log"],
                                           "cause": said.group(1)}]})
    if system.startswith(SUMMARY):
        return "A summary."
    return approving(system, user)


@pytest.fixture
def model(gemini_server: GeminiServer, llm: JsonLLM) -> JsonLLM:
    gemini_server.respond_with(rule)
    return llm


def _learned(name: str, cause: str, before: str) -> IncidentInput:
    return IncidentInput(f"Cause: {cause}", TASK, task_logs={"check": ENDING}, incident_id=name,
                         full_logs={"check": "info: cloning g/app\n" + before + ENDING})


def test_the_log_text_keeps_distinct_normalised_lines_newest_first_within_its_cap() -> None:
    text = log_text({"job": "step 1 at 10:00:01\nstep 1 at 10:00:02\nfailed: exit 2\n"}, limit=100)
    assert text.splitlines()[0] == "failed: exit <N>"
    assert len(text.splitlines()) == 2  # the two step lines differ only by their time
    assert log_text({"job": "a" * 80 + "\n" + "b" * 80}, limit=100) == "b" * 80


async def test_the_cause_whose_whole_log_is_alike_ranks_first(model: JsonLLM) -> None:
    async for stores in open_stores():
        accumulator, navigator = parts(model, stores)
        await accumulator.process(_learned("past-migrations", "broken database migration", MIGRATIONS))
        await accumulator.process(_learned("past-assets", "bundle size budget exceeded", ASSETS))
        [stored] = await stores.vectors.by_incident("past-assets", LOG_SECTION)
        assert stored.payload["content"] == ""  # the vector only: no log text kept
        new = IncidentInput("", TASK, task_logs={"check": "info: cloning g/app\n" + ASSETS.replace("0 ms", "5 ms")
                                                 + ENDING}, incident_id="new")
        evidence, _ = await navigator.gather(new)
        assert [c.name for c in evidence.candidates] == ["bundle size budget exceeded",
                                                         "broken database migration"]


async def test_an_incident_learned_from_an_excerpt_alone_barely_counts_against_a_whole_log(model: JsonLLM) -> None:
    # Every line of the excerpt is in the new log, so their raw cosine is high; but a few lines set
    # against a whole log say nothing about the two jobs running alike.
    async for stores in open_stores():
        accumulator, _ = parts(model, stores)
        await accumulator.process(_learned("past-assets", "bundle size budget exceeded", ASSETS))
        await accumulator.process(IncidentInput("Cause: broken database migration", TASK,
                                                task_logs={"check": ENDING}, incident_id="excerpt-only"))
        whole = {"check": "info: cloning g/app\n" + ASSETS.replace("0 ms", "5 ms") + ENDING}
        scores = await log_scores(stores.vectors, stores.embedder, whole)
        new, excerpt = await stores.embedder.embed([log_text(whole), log_text({"check": ENDING})])
        cosine = sum(a * b for a, b in zip(new, excerpt, strict=True))
        assert scores["excerpt-only"] < 0.5 * cosine  # 3 lines against 8
        assert scores["excerpt-only"] < scores["past-assets"]
