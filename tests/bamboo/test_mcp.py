"""The MCP client layer against real servers the tests start: a stdio child and a streamable-HTTP server."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from hummingbird_agent.bamboo.mcp import (
    INSTALL_HINT,
    BuiltinMcpClient,
    CompositeMcpClient,
    ToolCallError,
    build_mcp_client,
    client_for,
    config_namespace,
)
from hummingbird_agent.config.mcp_servers import load_server_configs
from hummingbird_agent.errors import ConfigError
from hummingbird_agent.tools import ToolDef
from tests.bamboo.mcp_servers import SERVER, HttpMcpServer, free_port


def write_config(tmp_path: Path, *servers: dict) -> Path:
    path = tmp_path / "mcp_servers.json"
    path.write_text(json.dumps({"servers": list(servers)}))
    return path


def stdio_entry(**extra: object) -> dict:
    return {"name": "ci", "command": sys.executable, "args": [str(SERVER), "stdio"], **extra}


def local_tool(name: str = "gitlab_get_job_log", read_only: bool = True) -> ToolDef:
    def handler(job_id: int) -> str:
        return f"log of job {job_id} from the builtin client"

    return ToolDef(name, "Log of a CI job.", {"type": "object", "properties": {"job_id": {"type": "integer"}},
                                              "required": ["job_id"]}, handler, read_only=read_only)


# --- config file ---------------------------------------------------------------------------------------

def test_config_expands_env_vars_in_headers_and_env_and_skips_disabled(tmp_path: Path) -> None:
    path = write_config(tmp_path,
                        {"name": "h", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOK}"}},
                        stdio_entry(env={"EXTRA": "x-${SUFFIX}"}),
                        {"name": "off", "command": "true", "enabled": False})
    entries = load_server_configs(path, {"TOK": "abc", "SUFFIX": "y"})
    assert [e.name for e in entries] == ["h", "ci"]
    assert entries[0].headers == {"Authorization": "Bearer abc"}
    assert entries[1].env == {"EXTRA": "x-y"}


@pytest.mark.parametrize(("entry", "message"), [
    ({"name": "both", "url": "http://x/mcp", "command": "y"}, "give exactly one of url or command"),
    ({"name": "none"}, "give exactly one of url or command"),
    ({"name": "re", "command": "y", "include_tools": ["("]}, "bad tool pattern"),
    ({"name": "h", "url": "http://x/mcp", "headers": {"A": "${MISSING}"}}, "${MISSING}, which is not set"),
])
def test_config_errors_are_one_clear_line(tmp_path: Path, entry: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_server_configs(write_config(tmp_path, entry), {})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_config_file_missing_or_not_json(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_server_configs(tmp_path / "nope.json", {})
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="not JSON"):
        load_server_configs(tmp_path / "bad.json", {})


def test_namespace_depends_on_config_and_provider(tmp_path: Path) -> None:
    path = write_config(tmp_path, stdio_entry())
    first = config_namespace(path, "gemini")
    assert first == config_namespace(path, "gemini") != config_namespace(path, "ollama")
    write_config(tmp_path, stdio_entry(read_only=True))
    assert config_namespace(path, "gemini") != first


# --- stdio -----------------------------------------------------------------------------------------------

async def test_stdio_server_tools_calls_env_and_read_only_flags(tmp_path: Path) -> None:
    entry = load_server_configs(write_config(tmp_path, stdio_entry(
        env={"ENTRY_VAR": "from-entry"}, exclude_tools=["^broken"], read_only_tools=["^get_", "^env_"])), {})[0]
    client = client_for(entry, {"SNAPSHOT_VAR": "from-snapshot", "GITLAB_TOKEN": "glpat-secret",
                                "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    await client.connect()
    try:
        tools = {t.name: t for t in client.list_tools()}
        assert set(tools) == {"get_runner_info", "restart_runner", "env_value"}
        assert tools["get_runner_info"].read_only and not tools["restart_runner"].read_only
        assert tools["get_runner_info"].server == "ci"
        assert await client.call("get_runner_info", {"runner": "r1"}) == {
            "runner": "r1", "tags": ["podman", "x86_64"], "free_disk_gb": 3}
        # The child inherits the harmless part of the (snapshot) environment plus the entry's env: no
        # token or other service variable reaches a third-party server unless its entry names it.
        assert await client.call("env_value", {"name": "LANG"}) == "C.UTF-8"
        assert await client.call("env_value", {"name": "GITLAB_TOKEN"}) == "<unset>"
        assert await client.call("env_value", {"name": "SNAPSHOT_VAR"}) == "<unset>"
        assert await client.call("env_value", {"name": "ENTRY_VAR"}) == "from-entry"
        with pytest.raises(ToolCallError, match="no tool 'broken_tool'"):
            await client.call("broken_tool", {})
    finally:
        await client.close()
    assert client.list_tools() == []


async def test_external_tools_are_not_read_only_unless_declared(tmp_path: Path) -> None:
    entry = load_server_configs(write_config(tmp_path, stdio_entry(include_tools=["runner"])), {})[0]
    client = client_for(entry, {"PATH": "/usr/bin:/bin"})
    await client.connect()
    try:
        assert {(t.name, t.read_only) for t in client.list_tools()} == {
            ("get_runner_info", False), ("restart_runner", False)}
    finally:
        await client.close()


async def test_a_failing_tool_call_raises_tool_call_error(tmp_path: Path) -> None:
    entry = load_server_configs(write_config(tmp_path, stdio_entry()), {})[0]
    client = client_for(entry, {"PATH": "/usr/bin:/bin"})
    await client.connect()
    try:
        with pytest.raises(ToolCallError, match="backend exploded for 4"):
            await client.call("broken_tool", {"x": 4})
    finally:
        await client.close()


@pytest.mark.parametrize("command", ["/nonexistent/mcp-server", "false"])
async def test_stdio_subprocess_failure_contributes_zero_tools_builtin_still_there(
        tmp_path: Path, command: str, caplog: pytest.LogCaptureFixture) -> None:
    path = write_config(tmp_path, {"name": "dead", "command": command})
    client = build_mcp_client([BuiltinMcpClient([local_tool()])], path, {"PATH": "/usr/bin:/bin"})
    with caplog.at_level(logging.WARNING):
        await client.connect()
    try:
        assert [t.name for t in client.list_tools()] == ["gitlab_get_job_log"]
        assert "mcp server dead (stdio) unavailable; it contributes no tools" in caplog.text
        assert await client.call("gitlab_get_job_log", {"job_id": 3}) == "log of job 3 from the builtin client"
    finally:
        await client.close()


# --- streamable HTTP -------------------------------------------------------------------------------------

async def test_http_server_connect_list_call(tmp_path: Path) -> None:
    with HttpMcpServer() as server:
        path = write_config(tmp_path, {"name": "remote", "url": server.url, "read_only": True,
                                       "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}})
        client = build_mcp_client([BuiltinMcpClient([local_tool()])], path, {"REMOTE_TOKEN": "t0k"})
        await client.connect()
        try:
            names = {t.name: t for t in client.list_tools()}
            assert {"gitlab_get_job_log", "get_runner_info", "restart_runner"} <= set(names)
            assert names["restart_runner"].read_only  # the entry declares the whole server read-only
            assert (await client.call("get_runner_info", {"runner": "r2"}))["runner"] == "r2"
            with pytest.raises(ToolCallError, match="backend exploded"):
                await client.call("broken_tool", {"x": 1})
        finally:
            await client.close()


async def test_http_server_down_contributes_zero_tools(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write_config(tmp_path, {"name": "down", "url": f"http://127.0.0.1:{free_port()}/mcp",
                                   "headers": {"Authorization": "Bearer ${TOKEN}"}})
    client = build_mcp_client([BuiltinMcpClient([local_tool()])], path, {"TOKEN": "sekrit-token"})
    with caplog.at_level(logging.WARNING):
        await client.connect()
    try:
        assert [t.name for t in client.list_tools()] == ["gitlab_get_job_log"]
        assert "mcp server down (http) unavailable; it contributes no tools" in caplog.text
        assert "sekrit-token" not in caplog.text
    finally:
        await client.close()


@pytest.mark.parametrize("entry", [{"name": "h", "url": "http://127.0.0.1:9/mcp"},
                                   {"name": "s", "command": sys.executable}])
async def test_mcp_not_installed_logs_install_hint(tmp_path: Path, entry: dict, monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    # A None entry in sys.modules makes `import mcp` fail exactly as if the package were absent.
    monkeypatch.setitem(sys.modules, "mcp", None)
    client = client_for(load_server_configs(write_config(tmp_path, entry), {})[0], {})
    with caplog.at_level(logging.WARNING):
        await client.connect()
    assert client.list_tools() == []
    assert INSTALL_HINT in caplog.text
    await client.close()


# --- composite -------------------------------------------------------------------------------------------

async def test_builtin_names_win_a_clash(tmp_path: Path) -> None:
    builtin = BuiltinMcpClient([local_tool("get_runner_info")])
    entry = load_server_configs(write_config(tmp_path, stdio_entry(read_only=True)), {})[0]
    client = CompositeMcpClient([builtin, client_for(entry, {"PATH": "/usr/bin:/bin"})])
    await client.connect()
    try:
        owners = {t.name: t.server for t in client.list_tools()}
        assert owners["get_runner_info"] == "builtin" and owners["restart_runner"] == "ci"
        assert await client.call("get_runner_info", {"job_id": 1}) == "log of job 1 from the builtin client"
        with pytest.raises(ToolCallError, match="unknown tool"):
            await client.call("nope", {})
    finally:
        await client.close()


async def test_builtin_client_checks_arguments_and_maps_failures() -> None:
    client = BuiltinMcpClient([local_tool()])
    with pytest.raises(ToolCallError, match="invalid arguments"):
        await client.call("gitlab_get_job_log", {"job_id": "x"})
    with pytest.raises(ToolCallError, match="unknown tool"):
        await client.call("other", {})
