"""KnowledgeReviewer: hard structural gaps, grounded tool annotations, fail-open on any LLM failure."""

from __future__ import annotations

import json

from hummingbird_agent.bamboo.incident_graph import Edge, KnowledgeGraph, NodeType, RelType, make_node
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.reviewer import NO_PROCEDURE, KnowledgeReviewer, ToolInfo
from tests.servers import GeminiServer, HTTPError

S, C, P = (make_node(NodeType.SYMPTOM, "error: x"), make_node(NodeType.CAUSE, "dns outage"),
           make_node(NodeType.PROCEDURE, "read log"))
COMPLETE = KnowledgeGraph((S, C, P), (Edge(S.key, RelType.INDICATE, C.key),
                                      Edge(C.key, RelType.INVESTIGATED_BY, P.key)))
TOOLS = [ToolInfo("request_human_input", "ask"), ToolInfo("get_job_log", "log")]


async def test_missing_procedure_is_a_rejection_annotated_with_the_human_input_tool(
        gemini_server: GeminiServer, llm: JsonLLM) -> None:
    gemini_server.respond_with(lambda s, u: "{}")
    review = await KnowledgeReviewer(llm).review(KnowledgeGraph((S, C), COMPLETE.edges[:1]), {}, {}, TOOLS)
    assert not review.approved
    assert review.issues == (f"{NO_PROCEDURE} → resolvable with request_human_input",)
    assert gemini_server.generate_calls == []


async def test_unexplained_symptom_is_a_structural_gap(gemini_server: GeminiServer, llm: JsonLLM) -> None:
    gemini_server.respond_with(lambda s, u: "{}")
    review = await KnowledgeReviewer(llm).review(KnowledgeGraph((S, C, P)), {}, {})
    assert not review.approved and "has no Cause explaining it" in review.issues[0]


async def test_llm_gaps_keep_only_annotations_naming_existing_tools(gemini_server: GeminiServer, llm: JsonLLM) -> None:
    answer = {"approved": False, "confidence": 0.4, "feedback": "name the timeout",
              "issues": ["Cause too vague → resolvable with get_job_log", "no version → resolvable with magic_tool"]}
    gemini_server.respond_with(lambda s, u: json.dumps(answer))
    review = await KnowledgeReviewer(llm).review(COMPLETE, {"job": "test"}, {"discussion": "x"}, TOOLS)
    assert review.issues == ("Cause too vague → resolvable with get_job_log", "no version")
    assert (review.approved, review.confidence, review.feedback) == (False, 0.4, "name the timeout")
    [(_, user)] = gemini_server.prompts
    assert "get_job_log: log" in user and "dns outage" in user


async def test_fail_open_on_llm_error(gemini_server: GeminiServer, llm: JsonLLM) -> None:
    def broken(system: str, user: str) -> str:
        raise HTTPError(503, "The model is overloaded.")  # the adapter (no retries here) raises TransientError

    gemini_server.respond_with(broken)
    review = await KnowledgeReviewer(llm).review(COMPLETE, {}, {})
    assert review.approved and review.confidence == 0.0


async def test_fail_open_on_unparseable_answer(gemini_server: GeminiServer, llm: JsonLLM) -> None:
    for text in ("I think it is fine", '{"approved": "maybe"}', "[1, 2]"):
        gemini_server.respond_with(lambda s, u, t=text: t)
        review = await KnowledgeReviewer(llm).review(COMPLETE, {}, {})
        assert review.approved, text


async def test_empty_graph_is_approved(gemini_server: GeminiServer, llm: JsonLLM) -> None:
    gemini_server.respond_with(lambda s, u: "{}")
    assert (await KnowledgeReviewer(llm).review(KnowledgeGraph(), {}, {})).approved
