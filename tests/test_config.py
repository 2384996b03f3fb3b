"""config.yaml validation: the shipped file is valid; broken files give one clear line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hummingbird_agent.config.loading import load_config, required_env_names
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.gitlab.seal import Seal

REPO = Path(__file__).resolve().parents[1]

MINIMAL = """\
workflows:
  analyze-failures:
    description: Analyse failures
    prompt: prompt.md
"""


def write_config(tmp_path: Path, text: str, prompt: bool = True) -> Path:
    if prompt:
        (tmp_path / "prompt.md").write_text("# prompt\n")
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_shipped_config_is_valid() -> None:
    loaded = load_config(REPO / "config.yaml", environ={})
    assert set(loaded.config.workflows) == {"analyze-failures", "review-mr", "bamboo-accumulate", "bamboo-diagnose",
                                            "investigate"}
    assert {name: wf.engine for name, wf in loaded.config.workflows.items()} == {
        "analyze-failures": "agent", "review-mr": "agent",
        "bamboo-accumulate": "bamboo-accumulate", "bamboo-diagnose": "bamboo-diagnose",
        "investigate": "bamboo-investigate"}
    assert not any(loaded.config.workflows[n].triggers for n in ("bamboo-accumulate", "bamboo-diagnose", "investigate"))
    assert loaded.prompt_path("analyze-failures") == REPO / "workflows" / "analyze-failures.md"


def test_prompt_resolves_relative_to_config_dir(tmp_path: Path) -> None:
    sub = tmp_path / "deploy"
    sub.mkdir()
    loaded = load_config(write_config(sub, MINIMAL), environ={})
    assert loaded.prompt_path("analyze-failures") == (sub / "prompt.md").resolve()


def test_secrets_come_from_named_env_vars(tmp_path: Path) -> None:
    text = MINIMAL + "    data_sources:\n      gitlab:\n        token_env: MY_READ\n"
    loaded = load_config(write_config(tmp_path, text), environ={"MY_READ": "glpat-read-123", "OTHER": "x"})
    assert "MY_READ" in required_env_names(loaded.config)
    assert loaded.secret("MY_READ") == "glpat-read-123"
    assert loaded.secret_values() == {"glpat-read-123"}


def test_a_named_marker_secret_is_a_secret_and_signs_with_its_own_key(tmp_path: Path) -> None:
    text = "gitlab:\n  marker_secret_env: MY_MARKERS\n" + MINIMAL
    loaded = load_config(write_config(tmp_path, text), environ={"MY_MARKERS": "marker-key-1234"})
    assert "MY_MARKERS" in required_env_names(loaded.config) and "marker-key-1234" in loaded.secret_values()
    with pytest.raises(ConfigError, match="MY_MARKERS"):
        load_config(write_config(tmp_path, text), environ={"MY_MARKERS": "short"}).secret_values()
    named, derived = Seal.from_secrets("marker-key-1234", "bot-token"), Seal.from_secrets(None, "bot-token")
    assert named.mac("x") != derived.mac("x") == Seal.from_secrets(None, "bot-token").mac("x")
    assert derived.mac("x") != Seal.from_secrets(None, "rotated-token").mac("x")


def test_env_override_applies(tmp_path: Path) -> None:
    env = {"EXTRACTION_STRATEGY": "panda", "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    loaded = load_config(write_config(tmp_path, MINIMAL), environ=env)
    assert loaded.config.bamboo.extraction_strategy == "panda"
    assert loaded.config.queues.endpoint_url == "http://127.0.0.1:9"


BROKEN = {
    "bad_yaml": ("workflows: [unclosed\n", "invalid YAML"),
    "unknown_key": (MINIMAL + "    colour: blue\n", "workflows.analyze-failures.colour: unknown key"),
    "wrong_type": (MINIMAL + "    max_iterations: lots\n", "workflows.analyze-failures.max_iterations:"),
    "unknown_engine": (MINIMAL + "    engine: magic\n", "workflows.analyze-failures.engine:"),
    "missing_prompt": (MINIMAL.replace("prompt.md", "nowhere.md"), "workflows.analyze-failures.prompt: file not found"),
    "duplicate_workflow": (
        MINIMAL + "  analyze-failures:\n    description: again\n    prompt: prompt.md\n",
        "duplicate key 'analyze-failures'",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_config_gives_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    text, expected = BROKEN[case]
    path = write_config(tmp_path, text)
    with pytest.raises(ConfigError, match=expected.replace("[", r"\[")):
        load_config(path, environ={})
    proc = subprocess.run(
        [sys.executable, "-m", "hummingbird_agent", "check-config", "--config", str(path)],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0]
    assert "Traceback" not in proc.stderr


def test_workflow_name_must_be_a_command(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must be letters"):
        load_config(write_config(tmp_path, MINIMAL.replace("analyze-failures:", "'bad name':")), environ={})


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "absent.yaml", environ={})
