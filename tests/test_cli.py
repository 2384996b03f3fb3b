"""The command line: help everywhere, check-config's summary."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hummingbird_agent.cli import build_parser, main

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "argv", [[], ["serve"], ["run"], ["check-config"], ["excerpt"], ["bamboo"], ["bamboo", "populate"]]
)
def test_help_everywhere(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*argv, "--help"])
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_check_config_summary(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "present")
    monkeypatch.delenv("GITLAB_READ_TOKEN", raising=False)
    assert main(["check-config", "--config", str(REPO / "config.yaml")]) == 0
    out = capsys.readouterr().out
    assert "workflows: 4" in out
    assert "bamboo-accumulate" in out and "bamboo-diagnose" in out
    assert "[engine bamboo-accumulate, model gemini-2.5-flash]" in out  # bamboo.model, not the workflow's
    assert "analyze-failures" in out and "review-mr" in out
    assert "example-group/example-project" in out
    assert "data sources: gitlab, testing_farm" in out
    missing = next(line for line in out.splitlines() if line.startswith("missing env vars"))
    assert "GITLAB_READ_TOKEN" in missing and "GEMINI_API_KEY" not in missing


def test_module_entry_point_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hummingbird_agent", "--version"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0
    assert proc.stdout.startswith("hummingbird-agent ")
