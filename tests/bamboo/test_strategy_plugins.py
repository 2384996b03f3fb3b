"""Extraction strategies as plugins: a separately installed package declares strategies in the
`hummingbird_agent.strategies` entry-point group, and the CLI uses one by name (check-config says where it comes
from, `bamboo populate --strategy acme` extracts with it, its source navigator becomes the explorer's
navigate_source tool); a plugin cannot take a built-in name, and one that cannot be loaded is one error line.
Without the package installed, none of it exists (the registry holds the built-ins only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.strategies.base import ENTRY_POINT_GROUP, default_registry
from tests.bamboo.strategy_plugin import install

REPO = Path(__file__).resolve().parents[2]
NAVIGATE = """
import asyncio
from hummingbird_agent.bamboo.factory import strategy_clients
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry
from hummingbird_agent.models import ScriptedModel

strategy = default_registry().create("acme", StrategyDeps(JsonLLM(ModelText(ScriptedModel([]), "m"))))
[client] = strategy_clients(strategy)(IncidentInput())
print([t.name for t in client.list_tools() if t.read_only])
print(asyncio.run(client.call("navigate_source", {"question": "why is the quota exceeded"})))
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("plugin"))


def run(site: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd),
               "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]), **env}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=environ, capture_output=True, text=True,
                          timeout=120, check=False)


def config(tmp_path: Path) -> Path:
    turns = [{"text": json.dumps({"approved": True, "confidence": 0.9, "issues": [], "feedback": ""})},
             {"text": "Deploys of g/app hit the Acme quota."}]
    (tmp_path / "turns.json").write_text(json.dumps({"turns": turns}))
    (tmp_path / "config.yaml").write_text(json.dumps({
        "model": {"provider": "scripted", "script": "turns.json"}, "workflows": {},
        "bamboo": {"enabled": True, "graph": {"path": "kb/graph"}, "vectors": {"path": "kb/qdrant"}}}))
    return tmp_path / "config.yaml"


def test_without_the_package_only_the_builtins_are_registered() -> None:
    assert default_registry().names() == ["gitlab_ci", "panda"]
    assert default_registry().origin("panda") == "built in" and default_registry().origin("acme") is None
    assert ENTRY_POINT_GROUP == "hummingbird_agent.strategies"


def test_check_config_names_the_plugin_strategy_and_its_package(site: Path, tmp_path: Path) -> None:
    path = config(tmp_path)
    proc = run(site, tmp_path, "-m", "hummingbird_agent", "check-config", "--config", str(path),
               EXTRACTION_STRATEGY="acme")
    assert proc.returncode == 0, proc.stderr
    assert "extraction strategy: acme (plugin acme-strategy 0.1.0)" in proc.stdout
    # The plugin's "panda" entry is ignored: the built-in keeps the name.
    proc = run(site, tmp_path, "-m", "hummingbird_agent", "check-config", "--config", str(path),
               EXTRACTION_STRATEGY="panda")
    assert proc.returncode == 0 and "extraction strategy: panda (built in)" in proc.stdout
    assert "strategy plugin 'panda' (plugin acme-strategy 0.1.0) ignored: the name is built in" in proc.stderr


def test_populate_extracts_with_the_plugin_strategy_by_name(site: Path, tmp_path: Path) -> None:
    path = config(tmp_path)
    incidents = tmp_path / "incidents.jsonl"
    incidents.write_text(json.dumps({"task_data": {"ticket": 42, "error": "quota exceeded for g/app"}}) + "\n")
    proc = run(site, tmp_path, "-m", "hummingbird_agent", "bamboo", "populate", str(incidents), "--dry-run",
               "--show", "--strategy", "acme", "--config", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "would store incident acme-42 (approved" in proc.stdout
    assert "Symptom: acme: quota exceeded for g/app" in proc.stdout
    assert "would store (dry run, nothing written): 1" in proc.stdout
    assert not (tmp_path / "kb").exists()


def test_the_plugins_source_navigator_is_the_explorers_navigate_source_tool(site: Path, tmp_path: Path) -> None:
    proc = run(site, tmp_path, "-c", NAVIGATE)
    assert proc.returncode == 0, proc.stderr
    tools, answer = proc.stdout.strip().split("\n", 1)
    assert tools == "['navigate_source']"
    assert answer == "acme/deploy.py:3: raise QuotaExceeded(f'acme quota exceeded for {project}')"


@pytest.mark.parametrize(("name", "error"), [
    ("broken", "cannot load acme_strategy_missing:Strategy (ModuleNotFoundError: No module named "
               "'acme_strategy_missing')"),
    ("halfdone", "does not implement the strategy interface: missing extract"),
])
def test_a_plugin_that_cannot_be_used_is_one_error_line(site: Path, tmp_path: Path, name: str, error: str) -> None:
    proc = run(site, tmp_path, "-m", "hummingbird_agent", "check-config", "--config", str(config(tmp_path)),
               EXTRACTION_STRATEGY=name)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    # One line for the error, after the warning about the plugin's clashing name.
    assert proc.stderr.strip().splitlines() == [
        "extraction strategy plugin 'panda' (plugin acme-strategy 0.1.0) ignored: the name is built in",
        f"error: extraction strategy '{name}' (plugin acme-strategy 0.1.0): {error}"]
