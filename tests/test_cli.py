"""The command line: help everywhere, check-config's summary."""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
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
    monkeypatch.setenv("GEMINI_API_KEY", "present-key")
    monkeypatch.delenv("GITLAB_READ_TOKEN", raising=False)
    assert main(["check-config", "--config", str(REPO / "config.yaml")]) == 0
    out = capsys.readouterr().out
    assert "workflows: 5" in out
    assert "bamboo-accumulate" in out and "bamboo-diagnose" in out
    assert "[engine bamboo-accumulate, model gemini-2.5-flash]" in out  # bamboo.model, not the workflow's
    assert "analyze-failures" in out and "review-mr" in out
    assert "example-group/example-project" in out
    assert "data sources: gitlab, testing_farm" in out
    assert ("triage: on, look-back 10 pipelines / 7 days, no commit status, outage guard from 2 MRs in 30 min, "
            "status note, model when news, culprit search") in out
    missing = next(line for line in out.splitlines() if line.startswith("missing env vars"))
    assert "GITLAB_READ_TOKEN" in missing and "GEMINI_API_KEY" not in missing


def test_module_entry_point_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hummingbird_agent", "--version"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0
    assert proc.stdout.startswith("hummingbird-agent ")


@pytest.mark.parametrize("argv", [["check-config"], ["queue", "stats"]])
def test_output_into_a_closed_pipe_is_no_traceback(argv: list[str], tmp_path: Path) -> None:
    """`check-config | head -1`: the reader is gone before the command prints."""
    config = tmp_path / "config.yaml"
    config.write_text((REPO / "config.yaml").read_text().replace("workflows/", f"{REPO}/workflows/"))
    (tmp_path / "var").mkdir()
    sqlite3.connect(tmp_path / "var/queue.sqlite").close()
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "hummingbird_agent", *argv, "--config", str(config)],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert proc.stderr == ""
    assert proc.returncode == 141  # as a tool stopped by SIGPIPE reports it


def test_command_table_lists_every_subcommand() -> None:
    """docs/getting-started.md "Commands": each row's first word is a command and `a|b|c` its subcommands, as the
    parser has them."""
    section = (REPO / "docs" / "getting-started.md").read_text().split("## Commands", 1)[1].split("##", 1)[0]
    listed = {}
    for cell in re.findall(r"^\| `([^`]+)` \|", section, re.M):
        words = cell.replace("\\|", "|").split()
        listed[words[0]] = set(words[1].split("|")) if len(words) > 1 and "|" in words[1] else set()
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(listed) == set(commands)
    for name, sub in commands.items():
        nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        assert listed[name] == (set(nested[0].choices) if nested else set()), name


SHORT_CONFIG = """
gitlab: {url: "http://127.0.0.1:9", token_env: HB_TEST_BOT_TOKEN}
model: {provider: gemini, api_key_env: HB_TEST_MODEL_KEY}
queues: {embedded_path: queue.sqlite}
webhook: {port: 0, secret_env: HB_TEST_HOOK_SECRET}
sessions: {directory: sessions}
workflows: {wf: {description: d, prompt: p.md, projects: {g/p: {}}}}
"""


@pytest.mark.parametrize("argv", [["check-config"], ["serve"], ["run", "wf", "--project", "g/p", "--mr", "1"]],
                         ids=["check-config", "serve", "run"])
def test_a_secret_too_short_to_redact_is_refused_in_one_line_naming_its_variable(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.yaml").write_text(SHORT_CONFIG)
    (tmp_path / "p.md").write_text("prompt")
    monkeypatch.setenv("HB_TEST_BOT_TOKEN", "a-long-enough-token")
    monkeypatch.setenv("HB_TEST_HOOK_SECRET", "a-long-enough-secret")
    monkeypatch.setenv("HB_TEST_MODEL_KEY", "k3y-7ch")  # 7 characters
    assert main([*argv, "--config", str(tmp_path / "config.yaml")]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert "HB_TEST_MODEL_KEY" in captured.err and "shorter than 8 characters" in captured.err
    assert "k3y-7ch" not in captured.out + captured.err
    assert not (tmp_path / "queue.sqlite").exists()  # refused before anything started
