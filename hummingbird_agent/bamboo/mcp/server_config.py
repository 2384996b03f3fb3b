"""The clients of the external MCP servers that MCP_SERVERS_CONFIG names (the file itself is parsed in
config/mcp_servers.py), and the namespace of their tool vectors."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from hummingbird_agent.bamboo.mcp.base import McpClient
from hummingbird_agent.bamboo.mcp.composite import CompositeMcpClient
from hummingbird_agent.bamboo.mcp.external import ExternalMcpClient, StdioMcpClient, ToolFilters
from hummingbird_agent.config.mcp_servers import McpServerEntry, load_server_configs

# What a stdio child inherits from the service's environment: how to find programs, locale, temp dir and
# the deployment's CA bundle. Never the rest: the service's environment holds the GitLab token, model keys
# and data-source tokens, and a third-party server gets a secret only when its entry's `env` names it.
INHERITED_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
                 "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")


def client_for(entry: McpServerEntry, env: Mapping[str, str]) -> McpClient:
    """The client of one entry; a stdio child gets the `INHERITED_ENV` part of `env` (the service's
    snapshot) plus the entry's env."""
    filters = ToolFilters(entry.include_tools, entry.exclude_tools, entry.read_only, entry.read_only_tools)
    if entry.url:
        return ExternalMcpClient(entry.name, entry.url, entry.headers, filters)
    inherited = {k: env[k] for k in INHERITED_ENV if k in env}
    return StdioMcpClient(entry.name, entry.command, entry.args, {**inherited, **entry.env}, filters)


def build_mcp_client(builtin: Sequence[McpClient], config_path: str | Path | None,
                     env: Mapping[str, str]) -> McpClient:
    """Builtin clients first (their names win a clash), then one client per enabled external server."""
    externals = [client_for(e, env) for e in load_server_configs(config_path, env)] if config_path else []
    clients = [*builtin, *externals]
    return clients[0] if len(clients) == 1 else CompositeMcpClient(clients)


def config_namespace(config_path: str | Path | None, provider: str) -> str:
    """Hash of the MCP servers file and the model provider: the namespace of the tool vectors, so
    differently-configured instances sharing one Qdrant do not overwrite each other's catalogue."""
    digest = hashlib.sha256(provider.encode())
    if config_path:
        try:
            digest.update(Path(config_path).read_bytes())
        except OSError:
            digest.update(str(config_path).encode())
    return digest.hexdigest()[:12]
