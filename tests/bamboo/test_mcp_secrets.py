"""The MCP servers file's header and env values are secrets to scrub; a broken file leaves the plain set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hummingbird_agent.config.loading import load_config
from hummingbird_agent.errors import ConfigError

ENV = {"GITLAB_READ_TOKEN": "glpat-read-123", "MCP_TOKEN": "mcp-token-456", "DB_PASSWORD": "db-pass-789"}


def loaded(tmp_path: Path, servers: object) -> frozenset[str]:
    (tmp_path / "mcp.json").write_text(servers if isinstance(servers, str) else json.dumps(servers))
    (tmp_path / "config.yaml").write_text(
        "bamboo: {mcp_servers_config: mcp.json}\n"
        "workflows: {wf: {description: d, prompt: p.md, data_sources: {gitlab: {token_env: GITLAB_READ_TOKEN}}}}\n")
    (tmp_path / "p.md").write_text("prompt")
    return load_config(tmp_path / "config.yaml", environ=ENV).secret_values()


def test_expanded_headers_and_env_are_secret_values(tmp_path: Path) -> None:
    servers = {"servers": [
        {"name": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}},
        {"name": "stdio", "command": "srv", "env": {"DB_URL": "postgres://u:${DB_PASSWORD}@db/x"}},
        {"name": "off", "command": "srv", "enabled": False, "env": {"X": "never-used-value"}}]}
    values = loaded(tmp_path, servers)
    assert {"glpat-read-123", "Bearer mcp-token-456", "mcp-token-456", "postgres://u:db-pass-789@db/x"} <= values
    assert "never-used-value" not in values


def test_a_broken_mcp_file_leaves_the_plain_set(tmp_path: Path) -> None:
    assert loaded(tmp_path, "{not json") == {"glpat-read-123"}
    unset = {"servers": [{"name": "h", "url": "http://127.0.0.1:1/mcp", "headers": {"A": "${NOT_SET}"}}]}
    assert loaded(tmp_path, unset) == {"glpat-read-123"}


def test_a_short_secret_the_file_refers_to_is_refused_and_a_short_literal_is_a_setting(tmp_path: Path) -> None:
    short = {"servers": [{"name": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X-Key": "${SHORT}"}}]}
    loaded(tmp_path, {"servers": []})  # writes the config and prompt
    (tmp_path / "mcp.json").write_text(json.dumps(short))
    with pytest.raises(ConfigError, match="^SHORT: a secret shorter than 8 characters") as info:
        load_config(tmp_path / "config.yaml", environ={**ENV, "SHORT": "abc"}).secret_values()
    assert "abc" not in str(info.value)
    values = loaded(tmp_path, {"servers": [{"name": "stdio", "command": "srv", "env": {"DEBUG": "1"}}]})
    assert values == {"glpat-read-123"}
