"""`bamboo populate --strategy panda` on a PanDA-shaped sample set (tests/fixtures/panda/incidents.jsonl,
written from the documented JEDI task field tables): the stored causes are the ones the threads state,
the features are what the task fields say (bucketed, split rules, CLI flags, pseudonymised users)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import KnowledgeAccumulator
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.populate import populate
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer
from hummingbird_agent.bamboo.strategies.base import StrategyDeps, default_registry
from hummingbird_agent.bamboo.strategies.causal import cause_name
from hummingbird_agent.cli import main
from tests.bamboo.fakes import EXTRACT, REVIEW, causal_answer
from tests.bamboo.test_commands import state, stores
from tests.servers import GeminiServer

SAMPLE = Path(__file__).parents[1] / "fixtures" / "panda" / "incidents.jsonl"
CAUSES = {"panda-41001": "jobs request more memory than the candidate sites allow",
          "panda-41002": "the input dataset was empty when the task was defined",
          "panda-41003": "jobs ran past the queue's walltime limit"}


def rule(system: str, user: str) -> str:
    """Reads the cause and resolution the thread states, as an extraction model would."""
    if system.startswith(EXTRACT):
        cause = re.search(r"Cause: (.+)", user)
        fix = re.search(r"Resolution: (.+)", user)
        return causal_answer(cause.group(1).strip(), fix.group(1).strip() if fix else "") if cause else "{}"
    if system.startswith(REVIEW):
        return json.dumps({"approved": True, "confidence": 0.9})
    return "A summary."


async def test_populate_panda_sample_stores_stated_causes_and_field_features(
        tmp_path: Path, gemini_server: GeminiServer, llm: JsonLLM) -> None:
    gemini_server.respond_with(rule)
    strategy = default_registry().create("panda", StrategyDeps(llm, b"salt"))
    s = stores(tmp_path)
    out = io.StringIO()
    accumulator = KnowledgeAccumulator(KnowledgeGraphExtractor(strategy), KnowledgeReviewer(llm), llm, s)
    assert await populate(accumulator, s, str(SAMPLE), False, 0, out=out, progress=io.StringIO()) == 0
    assert "stored: 3" in out.getvalue()
    snap = await state(tmp_path, "")  # PanDA tasks have no GitLab project: nobody's, plain names
    causes = {c.name: c.incidents for c in snap["causes"]}  # type: ignore[attr-defined]
    assert causes == {cause_name(cause): (incident,) for incident, cause in CAUSES.items()}  # stored canonical
    features = {f.name for f in snap["features"]}  # type: ignore[attr-defined]
    assert {"ramCount=3-4GB", "ramCount=12-16GB", "ramCount=1-2GB", "walltime=<1h", "walltime=6-24h",
            "splitRule:nFilesPerJob=5", "splitRule:nEventsPerJob=5000", "splitRule:nGBPerJob=10",
            "task_creation_arguments:memory=4000", "prodSourceLabel=managed", "coreCount=8",
            "campaign=data24", "transUses=Athena-22.0.1"} <= features
    # Identity fields are pseudonymised; skipped CLI flags (outDS, inDS) never become features.
    assert any(re.fullmatch(r"userName=user-[0-9a-f]{8}", f) for f in features)
    assert not any("alice" in f or "bob" in f or "outDS" in f or "inDS" in f for f in features)


def test_cli_populate_with_strategy_panda(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = [t for cause in CAUSES.values()
             for t in ({"text": causal_answer(cause)}, {"text": '{"approved": true, "confidence": 0.9}'},
                       {"text": "summary"})]
    (tmp_path / "turns.json").write_text(json.dumps({"turns": turns}))
    (tmp_path / "config.yaml").write_text(
        "model: {provider: scripted, script: turns.json}\nworkflows: {}\n"
        "bamboo: {enabled: true, embeddings: {dimensions: 64}, graph: {path: graph}, vectors: {path: qdrant}}\n")
    config = str(tmp_path / "config.yaml")
    args = ["bamboo", "populate", str(SAMPLE), "--config", config, "--max-retries", "0"]
    assert main([*args, "--strategy", "panda"]) == 0
    assert "stored: 3" in capsys.readouterr().out
    assert main(["bamboo", "stats", "--config", config]) == 0
    text = capsys.readouterr().out
    assert "incidents: 3" in text and "jobs request more memory than the candidate sites allow" in text
    assert main([*args, "--strategy", "jira"]) == 2
    assert "--strategy 'jira' is not registered (registered: gitlab_ci, panda)" in capsys.readouterr().err
