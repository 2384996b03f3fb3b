"""Shared set-up of the diagnosis tests: embedded stores, the rules the scripted model server answers by,
incidents A and B."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

from hummingbird_agent.bamboo.diagnose.navigator import Explorer, ReasoningNavigator
from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import KnowledgeAccumulator, Stores
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.bamboo.stores.scoped import Scope, scoped
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry
from tests.bamboo.fakes import EXTRACT, REVIEW, SUMMARY

DIAGNOSE = "You diagnose a new CI failure"
DRAFT = "Write a short message"
CAUSE_A, FIX_A = "npm registry mirror unreachable", "switch to the internal npm mirror"
CAUSE_B, FIX_B = "runner disk full", "clean the runner's container storage"
TASK = {"project": "g/app", "job": "build", "stage": "build", "status": "failed", "failure_reason": "script_failure"}
INCIDENT_A = IncidentInput(
    "The build could not reach registry.npmjs.org: the mirror was down. Fixed by switching to the internal mirror.",
    {**TASK, "pipeline": 100}, task_logs={"build": "$ npm ci\nnpm ERR! code ETIMEDOUT after 30000 ms\n"
                                                   "npm ERR! network request to https://registry.npmjs.org/left-pad "
                                                   "failed\nERROR: Job failed: exit code 1\n"})
INCIDENT_B = IncidentInput(
    "The runner ran out of disk; we pruned container storage.",
    {**TASK, "job": "test", "stage": "test", "pipeline": 101},
    task_logs={"test": "$ make test\nOSError: [Errno 28] No space left on device\nERROR: Job failed: exit code 1\n"})
LIKE_A = IncidentInput("", {**TASK, "pipeline": 200},
                       task_logs={"build": "$ npm ci\nnpm ERR! code ETIMEDOUT after 45000 ms\n"
                                           "ERROR: Job failed: exit code 1\n"})
LIKE_NEITHER = IncidentInput("", {**TASK, "job": "lint", "stage": "lint", "pipeline": 201},
                             task_logs={"lint": "$ ./run-linter\nSegmentation fault (core dumped) in lint_parser\n"
                                                "ERROR: Job failed: exit code 139\n"})


def _facts(user: str, kind: str) -> list[str]:
    block = user.split("## Facts extracted by code", 1)[1].split("##", 1)[0]
    return re.findall(rf"^- {kind}: (.+)$", block, re.MULTILINE)


def extraction(user: str) -> str:
    """Causes only when a discussion explains them; a diagnosis's clue extraction gets none."""
    for marker, cause, fix in (("mirror", CAUSE_A, FIX_A), ("disk", CAUSE_B, FIX_B)):
        if marker in user.split("## Discussion and fix", 1)[1].split("##", 1)[0]:
            return json.dumps({
                "causes": [{"name": cause, "description": f"{cause}.", "confidence": 0.9,
                            "symptoms": _facts(user, "Symptom"),
                            "features": [f for f in _facts(user, "Task_Feature") if f.startswith("project=")]}],
                "resolutions": [{"name": fix, "steps": [fix], "cause": cause}],
                "procedures": [{"name": "read the failing job log", "tools": ["gitlab_get_job_log"],
                                "cause": cause}]})
    return "{}"


def diagnosis(user: str) -> str:
    """Names the top-ranked candidate when there is one, else a low-confidence hypothesis."""
    block = user.split("## Candidate causes (ranked)", 1)[1].split("##", 1)[0]
    top = re.search(r"^1\. (.+?) — clue types (\d)", block, re.MULTILINE)
    if top and int(top.group(2)) > 1:
        ids = re.findall(r"incident_id (\S+)", user)
        return json.dumps({"root_cause": top.group(1), "confidence": 0.85, "resolution": "",
                           "explanation": "Same error signature as a past incident.",
                           "supporting_evidence": [{"source": "graph", "evidence": "signature",
                                                    "incident_id": ids[0] if ids else ""}]})
    return json.dumps({"root_cause": "a panic in the linted code (hypothesis)", "confidence": 0.2,
                       "resolution": "", "explanation": "First-principles hypothesis from the panic message."})


def rules(system: str, user: str) -> str:
    if system.startswith(EXTRACT):
        return extraction(user)
    if system.startswith(REVIEW):
        return json.dumps({"approved": True, "confidence": 0.9})
    if system.startswith(SUMMARY):
        return "Summary: " + user.split("## Discussion", 1)[1].strip()[:200]
    if system.startswith(DIAGNOSE):
        return diagnosis(user)
    if system.startswith(DRAFT):
        return "Hello, your build failed. " + user.split("## Diagnosis", 1)[1].strip()[:300]
    raise AssertionError(f"unexpected prompt {system[:40]!r}")


async def open_stores() -> AsyncIterator[Stores]:
    stores = Stores(CypherGraphStore(LadybugSession(":memory:")), QdrantVectorStore("kb", 256, path=":memory:"),
                    HashingEmbedder(256))
    await stores.graph.open()
    await stores.vectors.open()
    try:
        yield stores
    finally:
        await stores.vectors.aclose()
        await stores.graph.aclose()


def parts(llm: JsonLLM, stores: Stores, explorer: Explorer | None = None, share_groups: list[list[str]] | None = None,
          ) -> tuple[KnowledgeAccumulator, ReasoningNavigator]:
    extractor = KnowledgeGraphExtractor(default_registry().create("gitlab_ci", StrategyDeps(llm)))
    return (KnowledgeAccumulator(extractor, KnowledgeReviewer(llm), llm, stores, share_groups=share_groups or ()),
            ReasoningNavigator(extractor, llm, stores, explorer, 0.5, "GitLab CI guidance"))


def view(stores: Stores, project: str = TASK["project"]) -> Stores:
    """The stores as `project` reads them (the graph keys every node by its project; a view shows plain names)."""
    return scoped(stores, Scope.of(project))
