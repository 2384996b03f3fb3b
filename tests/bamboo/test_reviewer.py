"""KnowledgeReviewer: hard structural gaps, grounded tool annotations, fail-open on any LLM failure."""

from __future__ import annotations

import json

from hummingbird_agent.bamboo.incident_graph import Edge, KnowledgeGraph, NodeType, RelType, make_node
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.reviewer import NO_PROCEDURE, KnowledgeReviewer, ToolInfo
from hummingbird_agent.errors import TransientError
from tests.bamboo.fakes import RuleModel

S, C, P = (make_node(NodeType.SYMPTOM, "error: x"), make_node(NodeType.CAUSE, "dns outage"),
           make_node(NodeType.PROCEDURE, "read log"))
COMPLETE = KnowledgeGraph((S, C, P), (Edge(S.key, RelType.INDICATE, C.key),
                                      Edge(C.key, RelType.INVESTIGATED_BY, P.key)))
TOOLS = [ToolInfo("request_human_input", "ask"), ToolInfo("get_job_log", "log")]


async def test_missing_procedure_is_a_rejection_annotated_with_the_human_input_tool() -> None:
    model = RuleModel(lambda s, u: "{}")
    review = await KnowledgeReviewer(JsonLLM(model)).review(KnowledgeGraph((S, C), COMPLETE.edges[:1]), {}, {}, TOOLS)
    assert not review.approved
    assert review.issues == (f"{NO_PROCEDURE} → resolvable with request_human_input",)
    assert model.calls == []


async def test_unexplained_symptom_is_a_structural_gap() -> None:
    review = await KnowledgeReviewer(JsonLLM(RuleModel(lambda s, u: "{}"))).review(
        KnowledgeGraph((S, C, P)), {}, {})
    assert not review.approved and "has no Cause explaining it" in review.issues[0]


async def test_llm_gaps_keep_only_annotations_naming_existing_tools() -> None:
    answer = {"approved": False, "confidence": 0.4, "feedback": "name the timeout",
              "issues": ["Cause too vague → resolvable with get_job_log", "no version → resolvable with magic_tool"]}
    model = RuleModel(lambda s, u: json.dumps(answer))
    review = await KnowledgeReviewer(JsonLLM(model)).review(COMPLETE, {"job": "test"}, {"discussion": "x"}, TOOLS)
    assert review.issues == ("Cause too vague → resolvable with get_job_log", "no version")
    assert (review.approved, review.confidence, review.feedback) == (False, 0.4, "name the timeout")
    assert "get_job_log: log" in model.calls[0][1] and "dns outage" in model.calls[0][1]


async def test_fail_open_on_llm_error() -> None:
    def broken(system: str, user: str) -> str:
        raise TransientError("model unavailable")

    review = await KnowledgeReviewer(JsonLLM(RuleModel(broken))).review(COMPLETE, {}, {})
    assert review.approved and review.confidence == 0.0


async def test_fail_open_on_unparseable_answer() -> None:
    for text in ("I think it is fine", '{"approved": "maybe"}', "[1, 2]"):
        review = await KnowledgeReviewer(JsonLLM(RuleModel(lambda s, u, t=text: t))).review(COMPLETE, {}, {})
        assert review.approved, text


async def test_empty_graph_is_approved() -> None:
    assert (await KnowledgeReviewer(JsonLLM(RuleModel(lambda s, u: "{}"))).review(KnowledgeGraph(), {}, {})).approved
