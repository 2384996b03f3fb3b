"""Malformed configs, as a careless operator writes them: `check-config` and `serve` give the same single
line and exit 2, never a traceback, and never repeat a secret pasted where a variable name belongs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hummingbird_agent.cli import main
from hummingbird_agent.config.loading import load_config
from hummingbird_agent.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
SECRET = "hunter2-Zq8vK3mP0wX"
WORKFLOW = """\
workflows:
  analyze-failures:
    description: Analyse failures
    prompt: prompt.md
"""
PROJECT = WORKFLOW + """\
    projects:
      group/project:
        trigger_rules:
"""
ENV_NAME_ERROR = "must be the name of an environment variable"

# case -> (config text or bytes, the one line must contain this)
CASES: dict[str, tuple[str | bytes, str]] = {
    "title_regex_unclosed": (PROJECT + "          title: {exclude: ['[skip hummingbird']}\n",
                             "trigger_rules.title: invalid regular expression '[skip hummingbird'"),
    "title_regex_include": (PROJECT + "          title: {include: ['(draft']}\n", "invalid regular expression"),
    "secret_in_secret_env": (f"webhook: {{secret_env: '{SECRET}'}}\n" + WORKFLOW,
                             f"webhook.secret_env: {ENV_NAME_ERROR}"),
    "secret_in_token_env": (f"gitlab: {{token_env: {SECRET}}}\n" + WORKFLOW, f"gitlab.token_env: {ENV_NAME_ERROR}"),
    "secret_in_source_env": (WORKFLOW + f"    data_sources: {{gitlab: {{token_env: '{SECRET}'}}}}\n",
                             f"data_sources.gitlab.token_env: {ENV_NAME_ERROR}"),
    "lowercase_env": ("model: {api_key_env: gemini_api_key}\n" + WORKFLOW, f"model.api_key_env: {ENV_NAME_ERROR}"),
    "empty_env": ("webhook: {secret_env: ''}\n" + WORKFLOW, f"webhook.secret_env: {ENV_NAME_ERROR}"),
    "digit_first_env": ("bamboo: {pseudonym_salt_env: 1SALT}\n" + WORKFLOW,
                        f"bamboo.pseudonym_salt_env: {ENV_NAME_ERROR}"),
    "secret_in_panda_env": (f"bamboo: {{panda: {{token_env: '{SECRET}'}}}}\n" + WORKFLOW,
                            f"bamboo.panda.token_env: {ENV_NAME_ERROR}"),
    "spaced_env": ("bamboo: {graph: {password_env: 'NEO4J PASSWORD'}}\n" + WORKFLOW, ENV_NAME_ERROR),
    "complex_key_list": ("? [a, b]\n: 1\n" + WORKFLOW, "config.yaml:1:3: a key must be a plain value"),
    "complex_key_mapping": (WORKFLOW + "    ? {a: 1}\n    : 2\n", "config.yaml:5:7: a key must be a plain value"),
    "not_utf8": (WORKFLOW.encode() + b"    model: gemini\xff\n", "config.yaml:5:18: not UTF-8 text (byte 0xff)"),
    "latin1_file": ("workflows:\n  caf\u00e9: {}\n".encode("latin-1"), "config.yaml:2:6: not UTF-8 text"),
    "control_character": (WORKFLOW + "    model: a\x07b\n", "config.yaml:5:13: invalid YAML"),
    "tab_indent": (WORKFLOW + "\tmodel: x\n", "config.yaml:5:1: invalid YAML"),
    "unclosed_flow": ("workflows: [unclosed\n", "config.yaml:2:1: invalid YAML"),
    "deep_nesting": ("x: " + "[" * 5000 + "]" * 5000 + "\n" + WORKFLOW, "invalid YAML (nested too deeply)"),
    "duplicate_key": ("webhook: {}\nwebhook: {}\n" + WORKFLOW, "config.yaml:2:1: duplicate key 'webhook'"),
    "top_level_list": ("- a\n- b\n", "the top level must be a mapping"),
    "empty_file": ("", "the top level must be a mapping"),
    "webhook_path_relative": ("webhook: {path: webhook}\n" + WORKFLOW,
                              "webhook.path: must be a URL path starting with '/'"),
    "heartbeat_over_half_visibility": ("queues: {visibility_timeout_s: 100, heartbeat_interval_s: 60}\n" + WORKFLOW,
                                       "queues: heartbeat_interval_s (60 s) must be under half of visibility"),
    "heartbeat_equals_visibility": ("queues: {visibility_timeout_s: 30, heartbeat_interval_s: 30}\n" + WORKFLOW,
                                    "must be under half"),
    "bool_for_int": ("queues: {max_concurrent_agents: true}\n" + WORKFLOW,
                     "queues.max_concurrent_agents: must be a whole number from 1 to 1000 message groups, got true"),
    "bool_for_float": ("sandbox: {cpus: yes}\n" + WORKFLOW, "sandbox.cpus: must be a number from 0.01 to 256 cores"),
    "float_for_int": (WORKFLOW + "    max_iterations: 2.5\n", "max_iterations: must be a whole number"),
    "whole_float_for_int": ("queues: {visibility_timeout_s: 300.0}\n" + WORKFLOW, "got 300.0"),
    "string_for_int": ("webhook: {port: '8080'}\n" + WORKFLOW, "webhook.port: must be a whole number from 0 to 65535"),
    "huge_visibility": ("queues: {visibility_timeout_s: 99999999}\n" + WORKFLOW, "from 1 to 43200 seconds"),
    "negative_grace": ("queues: {shutdown_grace_s: -1}\n" + WORKFLOW, "queues.shutdown_grace_s: must be a number"),
    "tiny_memory": ("sandbox: {memory_bytes: 1}\n" + WORKFLOW, "sandbox.memory_bytes: must be a whole number"),
    "huge_body": ("webhook: {max_body_bytes: 1000000000000}\n" + WORKFLOW,
                  "from 1024 to 16777216 bytes, got 1000000000000"),  # the bound exactly, not 1.67772e+07
    "port_out_of_range": ("webhook: {port: 70000}\n" + WORKFLOW, "webhook.port:"),
    "zero_iterations": (WORKFLOW + "    max_iterations: 0\n", "from 1 to 1000 model turns, got 0"),
    "nan_cpus": ("sandbox: {cpus: .nan}\n" + WORKFLOW, "got nan"),
    "infinite_heartbeat": ("queues: {heartbeat_interval_s: .inf}\n" + WORKFLOW, "got inf"),
    "negative_context": ("model: {context_limit_tokens: -5}\n" + WORKFLOW, "model.context_limit_tokens:"),
    "threshold_above_one": ("bamboo: {exploratory_threshold: 7}\n" + WORKFLOW, "bamboo.exploratory_threshold:"),
    "sqs_without_ingress_url": ("queues: {backend: sqs, work_url: 'http://127.0.0.1:9/q.fifo'}\n" + WORKFLOW,
                                "queues.ingress_url is required for role 'all' with the sqs backend"),
    "sqs_without_urls": ("queues: {backend: sqs}\n" + WORKFLOW, "queues.ingress_url is required"),
    "s3_without_bucket": ("sessions: {backend: s3}\n" + WORKFLOW, "sessions: s3_bucket is required"),
    "neo4j_without_uri": ("bamboo: {graph: {backend: neo4j}}\n" + WORKFLOW, "bamboo.graph: uri is required"),
    "nul_in_prompt_path": (WORKFLOW.replace("prompt.md", '"prompt\\0.md"'), "prompt: file not found: prompt\\x00.md"),
    "newline_in_prompt_path": (WORKFLOW.replace("prompt.md", '"a\\nb.md"'), "file not found: a\\nb.md"),
    "unknown_key": ("webhook: {colour: blue}\n" + WORKFLOW, "webhook.colour: unknown key"),
    "typo_and_no_workflows": ("webhok: {port: 1}\n", "workflows: required key is missing (and 1 more: webhok)"),
}
# Cases whose one line appears only for a role (check-config and serve are run with that role).
LOAD_PASSES = {"sqs_without_ingress_url", "sqs_without_urls"}


def _write(tmp_path: Path, content: str | bytes) -> Path:
    (tmp_path / "prompt.md").write_text("# prompt\n")
    path = tmp_path / "config.yaml"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def _cli(*args: str) -> subprocess.Popen[str]:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "hummingbird_agent", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_config_is_one_line_exit_2_no_traceback_no_secret(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    content, expected = CASES[case]
    path = _write(tmp_path, content)
    if case not in LOAD_PASSES:
        with pytest.raises(ConfigError) as raised:
            load_config(path, environ={})
        assert expected in str(raised.value)
    # The command-line entry point, as `python -m hummingbird_agent` runs it (an unexpected exception
    # would be exit 1 with a logged traceback).
    for command in ("check-config", "serve"):
        assert main([command, "--config", str(path)]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert len(err.splitlines()) == 1, err
        assert expected in err and err.startswith("error: ")
        assert "Traceback" not in err and SECRET not in err


@pytest.mark.parametrize("case", ["title_regex_unclosed", "secret_in_secret_env", "not_utf8", "sqs_without_urls"])
def test_as_processes_check_config_and_serve_print_the_same_line(tmp_path: Path, case: str) -> None:
    path = _write(tmp_path, CASES[case][0])
    procs = [_cli("check-config", "--config", str(path)), _cli("serve", "--config", str(path))]
    lines = set()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert (proc.returncode, out, len(err.splitlines())) == (2, "", 1), err
        assert "Traceback" not in err and SECRET not in err
        lines.add(err)
    assert len(lines) == 1 and CASES[case][1] in lines.pop()


@pytest.mark.parametrize("command", ["check-config", "serve"])
def test_ingress_role_without_the_webhook_is_refused(tmp_path: Path, command: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "webhook: {enabled: false}\n" + WORKFLOW)
    assert main([command, "--config", str(path), "--role", "ingress"]) == 2
    assert capsys.readouterr().err == (
        "error: config.yaml: role 'ingress' is the webhook endpoint, but webhook.enabled is false\n")


def test_env_override_that_is_not_a_number_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="EXPLORATORY_INVESTIGATION_THRESHOLD: must be a number"):
        load_config(_write(tmp_path, WORKFLOW), environ={"EXPLORATORY_INVESTIGATION_THRESHOLD": "high"})
    loaded = load_config(_write(tmp_path, WORKFLOW), environ={"EXPLORATORY_INVESTIGATION_THRESHOLD": "0.7"})
    assert loaded.config.bamboo.exploratory_threshold == 0.7


@pytest.mark.parametrize("command", ["check-config", "serve"])
def test_a_bad_log_level_is_one_line_and_an_empty_one_the_default(tmp_path: Path, command: str) -> None:
    path = _write(tmp_path, WORKFLOW)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO), "LOG_LEVEL": "verbose"}
    proc = subprocess.run([sys.executable, "-m", "hummingbird_agent", command, "--config", str(path)], env=env,
                          text=True, capture_output=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr == "error: LOG_LEVEL: must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, got 'VERBOSE'\n"
    assert load_config(path, environ={"LOG_LEVEL": " "}).log_level == "INFO"
    assert load_config(path, environ={"LOG_LEVEL": "debug"}).log_level == "DEBUG"


def test_shipped_config_names_only_valid_env_vars() -> None:
    loaded = load_config(REPO / "config.yaml", environ={})
    dumped = loaded.config.model_dump()
    names = []
    stack = [dumped]
    while stack:
        node = stack.pop()
        for key, value in node.items():
            if isinstance(value, dict):
                stack.append(value)
            elif key.endswith("_env") and value is not None:  # optional credentials are unset by default
                names.append(value)
    assert names and all(re.fullmatch(r"[A-Z_][A-Z0-9_]*", name) for name in names)
