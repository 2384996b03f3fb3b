"""`python -m hummingbird_agent bamboo analyze INCIDENT.json [--json]` with a scripted model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent.cli import main
from tests.bamboo.cli_kb import kb_config

TURNS = [
    {"text": "{}"},  # clue extraction: no causes named for a new failure
    {"text": json.dumps({"root_cause": "registry outage (hypothesis)", "confidence": 0.3, "resolution": "retry",
                         "explanation": "The npm registry timed out."})},
    {"text": "Your build failed because the npm registry timed out."},
]


def write_config(tmp_path: Path) -> Path:
    (tmp_path / "turns.json").write_text(json.dumps({"turns": TURNS}))
    return kb_config(tmp_path, {"provider": "scripted", "script": "turns.json"})


def test_analyze_prints_the_analysis_result_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    incident = tmp_path / "incident.json"
    incident.write_text(json.dumps({"task_data": {"project": "g/app", "job": "build"},
                                    "task_logs": {"build": "npm ERR! code ETIMEDOUT after 30000 ms\n"}}))
    assert main(["bamboo", "analyze", "--config", str(write_config(tmp_path)), str(incident), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["root_cause"] == "registry outage (hypothesis)" and result["confidence"] == 0.3
    assert result["explanation"].startswith("Nothing similar is known")
    assert result["novel_leads"] == ["npm ERR! code ETIMEDOUT after <DUR>"]
    assert result["email_content"].startswith("Your build failed")
    assert set(result) >= {"root_cause", "confidence", "resolution", "explanation", "supporting_evidence",
                           "capability_gaps", "email_content"}


def test_a_bad_incident_file_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    incident = tmp_path / "incident.json"
    incident.write_text("{not json")
    assert main(["bamboo", "analyze", "--config", str(write_config(tmp_path)), str(incident)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: bamboo analyze:") and "incident.json" in err and len(err.splitlines()) == 1


def test_several_incidents_print_one_json_line_each_and_progress(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    (tmp_path / "turns.json").write_text(json.dumps({"turns": TURNS * 2}))
    paths = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"task_data": {"project": "g/app", "job": name},
                                    "task_logs": {"build": "npm ERR! code ETIMEDOUT after 30000 ms\n"}}))
        paths.append(str(path))
    assert main(["bamboo", "analyze", "--config", str(config), *paths, "--json"]) == 0
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert [line["incident"] for line in lines] == paths
    assert all(line["root_cause"] == "registry outage (hypothesis)" for line in lines)
    assert "analyze: 1/2 done" in captured.err and "analyze: 2/2 done" in captured.err and "0 failed" in captured.err
