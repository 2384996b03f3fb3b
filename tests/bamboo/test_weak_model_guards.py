"""What a small model gets wrong in learning, refused: names copied from the extraction prompt, an approval
without confidence, a runaway narrative. The model is the real Gemini adapter talking to the scripted Gemini
server; the stores are the embedded ones."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import KnowledgeAccumulator, Stores
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.prompt_echo import PromptPhrases, prompt_phrases
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer
from hummingbird_agent.bamboo.strategies.base import StrategyDeps, default_registry
from hummingbird_agent.bamboo.strategies.causal import cut_at_sentence
from tests.bamboo.kb import INCIDENT_A, INCIDENT_B, view
from tests.servers import GeminiServer
from tests.servers.gemini import text_turn

APPROVE = text_turn(json.dumps({"approved": True, "confidence": 0.9, "issues": [], "feedback": ""}))
# What Qwen2.5-Coder 0.5B answered on three unrelated incidents: the template's own placeholders.
TEMPLATE_COPY = {"causes": [{"name": "3-8 word task-agnostic phrase", "description": "one or two sentences",
                             "confidence": 0.0, "symptoms": []}],
                 "resolutions": [{"name": "3-8 word phrase", "steps": ["..."], "cause": "cause name"}],
                 "procedures": [{"name": "3-8 word phrase for one investigation step",
                                 "tools": ["tool or command used"], "cause": "3-8 word task-agnostic phrase"}],
                 "components": [{"name": "Software component", "cause": "3-8 word task-agnostic phrase"}]}


def accumulator(llm: JsonLLM, stores: Stores) -> KnowledgeAccumulator:
    extractor = KnowledgeGraphExtractor(default_registry().create("gitlab_ci", StrategyDeps(llm)))
    return KnowledgeAccumulator(extractor, KnowledgeReviewer(llm), llm, stores)


def feedback(call: Any) -> str:
    user = call.body["contents"][-1]["parts"][0]["text"]
    return user.split("## Reviewer feedback on the previous attempt", 1)[1]


def extraction(cause: str) -> dict[str, Any]:
    return text_turn(json.dumps({"causes": [{"name": cause, "confidence": 0.9}],
                                 "procedures": [{"name": "read the failing job log", "tools": ["get_job_log"],
                                                 "cause": cause}]}))


async def test_names_copied_from_the_prompt_are_refused_and_extracted_again(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    gemini_server.script(text_turn(json.dumps(TEMPLATE_COPY)), extraction("npm registry mirror unreachable"),
                         APPROVE, text_turn("The mirror was down."))
    result = await accumulator(llm, stores).process(INCIDENT_A)
    assert result.approved and result.attempts == 2
    retry = feedback(gemini_server.generate_calls[1])
    assert "Cause name '3-8 word task-agnostic phrase' is text of the prompt" in retry
    assert "Component name 'software component' is text of the prompt" in retry
    assert [c.name for c in await view(stores).graph.nodes("Cause")] == ["npm registry mirror unreachable"]


async def test_a_name_the_prompt_supplied_is_never_stored_even_when_the_model_insists(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    learner = accumulator(llm, stores)
    for incident in (INCIDENT_A, INCIDENT_B):  # unrelated incidents: they must not share a "cause"
        gemini_server.script(*[text_turn(json.dumps(TEMPLATE_COPY))] * 3, text_turn("A summary."))
        result = await learner.process(incident)
        assert result.stored and not result.approved and result.attempts == 3
        assert any("is text of the prompt" in issue for issue in result.review.issues)
        assert not [n for n in result.knowledge.graph.nodes if n.type.value != "Symptom"
                    and n.type.value != "Task_Feature"]
    for kind in ("Cause", "Resolution", "Procedure", "Component"):
        assert await view(stores).graph.nodes(kind) == [], kind
    assert len(await view(stores).graph.nodes("Symptom")) >= 2 and (await stores.graph.counts()).incidents == 2
    assert "software component" not in gemini_server.generate_calls[-1].body["contents"][-1]["parts"][0]["text"]


def test_the_refused_phrases_come_from_the_prompt_text() -> None:
    edited = PromptPhrases.of(['{"name": "a brand new placeholder"}', "Name the failing service precisely."])
    assert edited.echoed("A brand-new placeholder!") and edited.echoed("the failing service")
    assert edited.echoed("a brand new placeholder the failing service")  # made only of prompt phrases
    assert not edited.echoed("failing service") and not edited.echoed("a brand new placeholder in dns")
    shipped = prompt_phrases()
    assert shipped.echoed("Runner, cluster or platform condition") and shipped.echoed("build failed")
    assert shipped.echoed("...") and shipped.echoed("")
    assert not shipped.echoed("runner disk full") and not shipped.echoed("compare runs")


def test_a_name_holding_our_feedback_or_a_template_placeholder_is_refused() -> None:
    # A small model on llama.cpp copied the guard's own rejection into a Resolution name.
    shipped = prompt_phrases()
    copied = ("fix: Task_Context name 'short label' is text of the prompt (a placeholder, an example or its own "
              "words), not a name from")
    assert shipped.echoed(copied) and shipped.echoed("software component of the npm step")
    assert not shipped.echoed("docker build failed on arm64")  # a reviewer's example, not the answer template
    assert not shipped.echoed("job depends on a missing artifact")  # a template key, not a placeholder value
    assert not shipped.echoed("set the time zone in the test script")


@pytest.mark.parametrize(("review", "stated"), [
    ({"approved": True, "confidence": 0.0}, "confidence 0.00"),
    ({"approved": True, "confidence": 0.3}, "confidence 0.30"),
    ({"approved": True}, "no confidence"), ({"approved": True, "confidence": float("nan")}, "no confidence")])
async def test_an_approval_without_enough_confidence_is_a_rejection(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores, review: dict[str, Any], stated: str) -> None:
    gemini_server.script(extraction("npm registry mirror unreachable"), text_turn(json.dumps(review)),
                         extraction("npm registry mirror unreachable"), APPROVE, text_turn("Summary."))
    result = await accumulator(llm, stores).process(INCIDENT_A)
    assert result.approved and result.attempts == 2
    assert f"the reviewer approved with {stated}, below {budgets.BAMBOO_REVIEW_MIN_CONFIDENCE}: not an approval" \
        in feedback(gemini_server.generate_calls[2])


async def test_a_runaway_summary_is_cut_after_its_last_whole_sentence_and_the_call_is_capped(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    runaway = "The npm mirror was unreachable, so npm ci timed out after 30000 ms. " * 90  # ~6 KB
    gemini_server.script(extraction("npm registry mirror unreachable"), APPROVE, text_turn(runaway))
    result = await accumulator(llm, stores).process(INCIDENT_A)
    summary = result.knowledge.summary
    assert budgets.BAMBOO_SUMMARY_MAX_CHARS - 70 < len(summary) <= budgets.BAMBOO_SUMMARY_MAX_CHARS
    assert summary.endswith("30000 ms.") and runaway.startswith(summary)
    config = gemini_server.generate_calls[-1].body["generationConfig"]
    assert config["maxOutputTokens"] == budgets.BAMBOO_SUMMARY_MAX_OUTPUT_TOKENS
    assert "maxOutputTokens" not in gemini_server.generate_calls[0].body["generationConfig"]  # JSON: never cut


async def test_a_runaway_without_a_sentence_end_gives_the_plain_summary(
        gemini_server: GeminiServer, llm: JsonLLM, stores: Stores) -> None:
    gemini_server.script(extraction("npm registry mirror unreachable"), APPROVE, text_turn("timeout " * 800))
    result = await accumulator(llm, stores).process(INCIDENT_A, dry_run=True)
    assert result.knowledge.summary.startswith("Symptom: ")
    assert "Cause: npm registry mirror unreachable" in result.knowledge.summary


def test_a_cut_never_ends_inside_a_number() -> None:
    assert cut_at_sentence("Pip failed. Python 3.5 is too old for it.", 21) == "Pip failed."
    assert cut_at_sentence("Pip failed. Rerun.", 18) == "Pip failed. Rerun."
