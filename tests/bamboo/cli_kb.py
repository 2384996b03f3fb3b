"""Config files for the `bamboo` command tests: embedded stores under the test's folder (kb/), and one that has
learned incidents A and B from the scripted Gemini server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hummingbird_agent.cli import main
from tests.bamboo.kb import INCIDENT_A, INCIDENT_B

GEMINI_KEY_ENV = "HB_TEST_GEMINI_KEY"


def kb_config(tmp_path: Path, model: dict[str, Any]) -> Path:
    """config.yaml in tmp_path with this `model` section and the knowledge base on, stores in tmp_path/kb."""
    config = {"model": model,
              "bamboo": {"enabled": True, "graph": {"path": "kb/graph"}, "vectors": {"path": "kb/qdrant"},
                         "embeddings": {"dimensions": 64}},
              "workflows": {}}
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))
    return path


def learned_config(tmp_path: Path, gemini_url: str) -> Path:
    """A config whose knowledge base (the scripted Gemini server, key in GEMINI_KEY_ENV) learned A as `a`
    and B as `b` through `bamboo populate`."""
    path = kb_config(tmp_path, {"provider": "gemini", "api_key_env": GEMINI_KEY_ENV, "base_url": gemini_url})
    data = tmp_path / "incidents.jsonl"
    data.write_text("\n".join(json.dumps({"id": gid, "email_text": i.email_text, "task_data": dict(i.task_data),
                                          "task_logs": dict(i.task_logs)})
                              for gid, i in (("a", INCIDENT_A), ("b", INCIDENT_B))) + "\n")
    assert main(["bamboo", "populate", "--config", str(path), str(data)]) == 0
    return path
