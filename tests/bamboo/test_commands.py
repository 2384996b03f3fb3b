"""`bamboo populate` / `bamboo stats`: idempotency over 100 incidents, per-line errors, the CLI."""

from __future__ import annotations

import gc
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.embeddings.hashing import HashingEmbedder
from hummingbird_agent.bamboo.json_llm import JsonLLM
from hummingbird_agent.bamboo.learn.accumulator import KnowledgeAccumulator, Stores
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.populate import populate
from hummingbird_agent.bamboo.learn.reviewer import KnowledgeReviewer
from hummingbird_agent.bamboo.stores.graph import CypherGraphStore
from hummingbird_agent.bamboo.stores.ladybug_backend import LadybugSession
from hummingbird_agent.bamboo.stores.qdrant_backend import QdrantVectorStore
from hummingbird_agent.bamboo.strategies.base import StrategyDeps, default_registry
from hummingbird_agent.cli import main
from hummingbird_agent.cli.knowledge import stats
from tests.bamboo.fakes import EXTRACT, REVIEW, causal_answer
from tests.bamboo.kb import view
from tests.servers import GeminiServer

CAUSES = ["npm mirror outage", "flaky dns", "runner out of disk", "expired token"]


def rule(system: str, user: str) -> str:
    if system.startswith(EXTRACT):
        number = int(user.split("incident-", 1)[1].split()[0])
        cause = "renamed fixture" if "CHANGED" in user else CAUSES[number % len(CAUSES)]
        return causal_answer(cause, f"fix for {cause}")
    if system.startswith(REVIEW):
        return json.dumps({"approved": "CHANGED" not in user, "confidence": 0.9})
    return "summary"


def incident_line(n: int, changed: bool = False) -> str:
    text = f"incident-{n} discussion" + (" CHANGED" if changed else "")
    log = f"step {n}\nERROR: {CAUSES[n % 4]} detected at 2024-01-0{1 + n % 9}T00:00:0{n % 10}Z\n"
    return json.dumps({"id": f"inc-{n}", "email_text": text, "task_data": {"project": "g/app", "job": f"job{n % 3}"},
                       "task_logs": {"build": log}})


def stores(tmp: Path) -> Stores:
    return Stores(CypherGraphStore(LadybugSession(str(tmp / "graph"))),
                  QdrantVectorStore("kb", 64, path=str(tmp / "qdrant")), HashingEmbedder(64))


@pytest.fixture
def model(gemini_server: GeminiServer, llm: JsonLLM) -> JsonLLM:
    gemini_server.respond_with(rule)
    return llm


def accumulator(llm: JsonLLM, s: Stores | None) -> KnowledgeAccumulator:
    strategy = default_registry().create("gitlab_ci", StrategyDeps(llm))
    return KnowledgeAccumulator(KnowledgeGraphExtractor(strategy), KnowledgeReviewer(llm), llm, s)


async def state(tmp: Path, project: str = "g/app") -> dict[str, object]:
    """What is stored, as `project` reads it (nodes are keyed by project); "": the stores themselves, where an
    incident without a project keeps plain names."""
    s = stores(tmp)
    await s.graph.open()
    await s.vectors.open()
    mine = view(s, project) if project else s
    snap = {"counts": await s.graph.counts(), "points": await s.vectors.count(),
            "causes": await mine.graph.nodes("Cause"), "indicate": await mine.graph.edges("indicate"),
            "features": await mine.graph.nodes("Task_Feature")}
    await s.vectors.aclose()
    await s.graph.aclose()
    return snap


async def run(llm: JsonLLM, tmp: Path, path: Path) -> str:
    out = io.StringIO()
    s = stores(tmp)
    await populate(accumulator(llm, s), s, str(path), False, None, out=out)
    return out.getvalue()


class FreezeSeen(io.StringIO):
    """A progress stream noting, at each line, how many objects the collector had frozen."""

    def __init__(self) -> None:
        super().__init__()
        self.frozen: list[int] = []

    def write(self, text: str) -> int:
        self.frozen.append(gc.get_freeze_count())
        return super().write(text)


async def test_startup_objects_are_frozen_while_populate_runs_and_thawed_after(model: JsonLLM, tmp_path: Path) -> None:
    data = tmp_path / "incidents.jsonl"
    data.write_text("\n".join(incident_line(n) for n in range(3)) + "\n")
    progress = FreezeSeen()
    s = stores(tmp_path)
    await populate(accumulator(model, s), s, str(data), False, None, out=io.StringIO(), progress=progress)
    assert progress.frozen and all(count > 0 for count in progress.frozen)  # each line is written mid-run
    assert gc.get_freeze_count() == 0


@pytest.mark.timeout(600)
async def test_populating_twice_is_idempotent_and_reprocessing_changes_only_its_contribution(
        model: JsonLLM, tmp_path: Path) -> None:
    data = tmp_path / "incidents.jsonl"
    data.write_text("\n".join(incident_line(n) for n in range(100)) + "\n")
    first = await run(model, tmp_path, data)
    assert "populate: 100 incidents" in first and "stored: 100" in first and "failed: 0" in first
    assert gc.get_freeze_count() == 0  # the collector is left as the run found it
    before = await state(tmp_path)
    await run(model, tmp_path, data)
    assert await state(tmp_path) == before
    [cause] = [c for c in before["causes"] if c.name == "flaky dns"]  # type: ignore[attr-defined]
    assert cause.frequency == 25

    one = tmp_path / "one.jsonl"
    one.write_text(incident_line(1, changed=True) + "\n")
    report = await run(model, tmp_path, one)
    assert "with a warning: 1" in report
    after = await state(tmp_path)
    causes = {c.name: c for c in after["causes"]}  # type: ignore[attr-defined]
    assert causes["flaky dns"].frequency == 24 and "inc-1" not in causes["flaky dns"].incidents
    assert causes["renamed fixture"].incidents == ("inc-1",)
    untouched = {c.name: c for c in before["causes"] if c.name != "flaky dns"}  # type: ignore[attr-defined]
    assert all(causes[name] == row for name, row in untouched.items())
    assert after["points"] == before["points"]


async def test_bad_lines_are_reported_with_their_number_and_skipped(model: JsonLLM, tmp_path: Path) -> None:
    data = tmp_path / "mixed.jsonl"
    data.write_text("\n".join([incident_line(0), "{not json", '{"task_data": {}}', '{"bogus": 1}', "[1]",
                               incident_line(2)]) + "\n")
    out = io.StringIO()
    code = await populate(accumulator(model, None), None, str(data), True, None, out=out)
    text = out.getvalue()
    assert code == 1 and "would store (dry run, nothing written): 2" in text
    assert "line 2: invalid JSON" in text and "line 4: bogus: Extra inputs" in text
    assert "line 3: needs email_text or task_data\n" in text and "line 5: not a JSON object\n" in text


async def test_stats_lists_counts_and_top_causes(model: JsonLLM, tmp_path: Path) -> None:
    data = tmp_path / "few.jsonl"
    data.write_text("\n".join(incident_line(n) for n in range(6)) + "\n")
    await run(model, tmp_path, data)
    out = io.StringIO()
    assert await stats(stores(tmp_path), out) == 0
    text = out.getvalue()
    assert "incidents: 6" in text and "Cause 4" in text and "indicate 4" in text
    assert "1. flaky dns (g/app) (incidents 2" in text and "2. npm mirror outage (g/app) (incidents 2" in text
    assert "resolutions: fix for npm mirror outage" in text
    total, sections = re.search(r"vector points: (\d+) \((.*)\)", text).groups()
    per_section = dict(part.rsplit(" ", 1) for part in sections.split(", "))
    assert per_section["Log"] == "6" and sum(map(int, per_section.values())) == int(total), text


def test_cli_populate_with_a_scripted_model_then_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = {"turns": [{"text": causal_answer("flaky dns", "retry")}, {"text": '{"approved": true, "confidence": 0.9}'},
                       {"text": "summary"}]}
    (tmp_path / "turns.json").write_text(json.dumps(turns))
    (tmp_path / "config.yaml").write_text(
        "model: {provider: scripted, script: turns.json}\nworkflows: {}\n"
        "bamboo: {enabled: true, embeddings: {dimensions: 32}}\n")
    (tmp_path / "in.jsonl").write_text(incident_line(1) + "\n")
    config = str(tmp_path / "config.yaml")
    assert main(["bamboo", "populate", str(tmp_path / "in.jsonl"), "--config", config, "--max-retries", "0"]) == 0
    assert "stored: 1" in capsys.readouterr().out
    assert main(["bamboo", "stats", "--config", config]) == 0
    assert "1. flaky dns (g/app) (incidents 1" in capsys.readouterr().out
    assert main(["bamboo", "analyze", "x.json", "--config", config]) == 2
    assert "x.json: cannot read" in capsys.readouterr().err
    assert main(["bamboo", "populate", str(tmp_path / "missing.jsonl"), "--config", config]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_dry_run_show_prints_what_would_be_stored_and_progress_lines(tmp_path: Path) -> None:
    turns = [{"text": causal_answer(cause, "retry")} for cause in ("flaky dns",)] + [
        {"text": '{"approved": true, "confidence": 0.9}'}, {"text": "summary one"},
        {"text": causal_answer("npm mirror outage", "use the cache")},
        {"text": '{"approved": true, "confidence": 0.9}'},
        {"text": "summary two"}]
    (tmp_path / "turns.json").write_text(json.dumps({"turns": turns}))
    (tmp_path / "config.yaml").write_text("model: {provider: scripted, script: turns.json}\nworkflows: {}\n"
                                          "bamboo: {enabled: true, embeddings: {dimensions: 32}}\n")
    (tmp_path / "in.jsonl").write_text("\n".join([incident_line(1), "{not json", incident_line(2)]) + "\n")
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("w") as stderr:
        done = subprocess.run(
            [sys.executable, "-m", "hummingbird_agent", "bamboo", "populate", str(tmp_path / "in.jsonl"), "--dry-run",
             "--show", "--max-retries", "0", "--config", str(tmp_path / "config.yaml")],
            stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=120, cwd=tmp_path, check=False)
    assert done.returncode == 1  # the bad line
    out, err = done.stdout, stderr_path.read_text()
    assert "line 1: would store incident " in out and "Cause: flaky dns" in out and "summary: summary one" in out
    assert "line 3: would store incident " in out and "Cause: npm mirror outage" in out
    assert "would store (dry run, nothing written): 2" in out and "line 2: invalid JSON" in out
    assert "\r" not in err and "\x1b" not in err
    assert re.search(r"^populate: 1/3 done, [\d.]+/s, ETA \S+, 0 failed$", err, re.MULTILINE)
    assert re.search(r"^populate: 3/3 done, [\d.]+/s, ETA 0s, 1 failed$", err, re.MULTILINE)
    assert not (tmp_path / "var").exists()  # a dry run creates no store
