"""Bad input to `run` ends in one clear line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hummingbird_agent.cli import main

REPO = Path(__file__).resolve().parents[2]


def write_config(tmp_path: Path, prompt: str = "prompt.md", provider: str = "gemini") -> Path:
    (tmp_path / "prompt.md").write_text("# prompt\n")
    (tmp_path / "turns.yaml").write_text("turns: [{text: hi, calls: [{args: {}}]}]\n")
    model = {"provider": provider, "script": "turns.yaml"} if provider == "scripted" else {"provider": provider}
    config = {"model": model, "workflows": {"analyze-failures": {"description": "d", "prompt": prompt}}}
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))
    return path


def run_args(config: Path, *argv: str) -> list[str]:
    return ["run", *argv, "--project", "g/p", "--mr", "1", "--config", str(config)]


@pytest.mark.parametrize(
    ("argv", "prompt", "expected"),
    [
        (["nope"], "prompt.md", "error: unknown workflow 'nope' (configured: analyze-failures)"),
        (["analyze-failures"], "missing.md", "workflows.analyze-failures.prompt: file not found: missing.md"),
        (["analyze-failures", "--resume", "/nonexistent/dir", "--message", "hi"], "prompt.md",
         "error: no saved session in /nonexistent/dir (context.json not found)"),
        (["analyze-failures", "--resume", "/nonexistent/dir"], "prompt.md", "error: --resume needs --message TEXT"),
        (["analyze-failures"], "prompt.md", "error: model.api_key_env: environment variable GEMINI_API_KEY is not set"),
        (["analyze-failures", "--post"], "prompt.md", "error: --post needs the bot token in HUMMINGBIRD_GITLAB_TOKEN"),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    argv: list[str], prompt: str, expected: str,
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)  # the environment, not our code
    monkeypatch.delenv("HUMMINGBIRD_GITLAB_TOKEN", raising=False)
    assert main(run_args(write_config(tmp_path, prompt), *argv)) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and expected in captured.err and len(captured.err.strip().splitlines()) == 1


@pytest.mark.parametrize("extra", [[], ["--post"]])  # refused before --post asks for the bot token
def test_a_learning_workflow_is_refused_before_anything_is_contacted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, extra: list[str]) -> None:
    monkeypatch.delenv("HUMMINGBIRD_GITLAB_TOKEN", raising=False)
    engine = "bamboo-accumulate"  # bamboo-diagnose runs (tests/runner/test_cli_diagnose.py)
    config = write_config(tmp_path, provider="scripted")
    data = json.loads(config.read_text())
    data["workflows"][engine] = {"description": "d", "prompt": "prompt.md", "engine": engine}
    data["bamboo"] = {"enabled": True, "provider": "gemini"}
    config.write_text(json.dumps(data))
    # No GitLab and no model are reachable here: a run that went on would fail differently.
    assert main(run_args(config, engine, *extra)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"error: workflow {engine} learns into the knowledge base (engine {engine})")
    assert "`/hummingbird learn`" in err and "`bamboo populate`" in err


def test_an_investigation_workflow_is_refused_pointing_to_the_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, provider="scripted")
    data = json.loads(config.read_text())
    data["workflows"]["investigate"] = {"description": "d", "prompt": "prompt.md", "engine": "bamboo-investigate"}
    data["bamboo"] = {"enabled": True, "provider": "gemini"}
    config.write_text(json.dumps(data))
    assert main(run_args(config, "investigate")) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: workflow investigate is an interactive investigation: use `/hummingbird investigate "
                   "<question>` on the MR, or `bamboo investigate \"<question>\"` at a terminal")


def test_a_real_process_prints_one_line_for_a_malformed_turns_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, provider="scripted")
    cmd = [sys.executable, "-m", "hummingbird_agent", *run_args(config, "analyze-failures")]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == "error: model.script: turns.yaml: turns.0.calls.0.name: Field required"
