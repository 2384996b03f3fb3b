"""MCP_SERVERS_CONFIG: the JSON file of external MCP servers, validated, with ${ENV_VAR} expansion (the clients
are built from these entries in bamboo/mcp/server_config.py).

The environment is the loaded config's snapshot, passed in; this module never reads the process environment itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from hummingbird_agent.errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class McpServerEntry(BaseModel):
    """One external server: exactly one of `url` (streamable HTTP) or `command` (stdio)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    """Server name (logs, tool ownership)."""
    url: str = ""
    """Streamable-HTTP endpoint, e.g. http://127.0.0.1:8080/mcp."""
    headers: dict[str, str] = {}
    """HTTP headers; values support ${ENV_VAR}."""
    command: str = ""
    """Executable of a stdio server."""
    args: list[str] = []
    """Its arguments."""
    env: dict[str, str] = {}
    """Extra environment of a stdio server (on top of the service's); values support ${ENV_VAR}."""
    enabled: bool = True
    """A disabled entry is skipped."""
    include_tools: list[str] = []
    """Regex patterns (re.search); when given, only matching tools are used."""
    exclude_tools: list[str] = []
    """Regex patterns of tools never used (applied after include_tools)."""
    read_only: bool = False
    """Every tool of this server changes nothing (external tools are state-changing unless declared)."""
    read_only_tools: list[str] = []
    """Regex patterns of this server's tools that change nothing."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerEntry:
        if bool(self.url) == bool(self.command):
            raise ValueError("give exactly one of url or command")
        for pattern in [*self.include_tools, *self.exclude_tools, *self.read_only_tools]:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"bad tool pattern {pattern!r}: {exc}") from None
        return self


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    servers: list[McpServerEntry]


def expand(value: str, env: Mapping[str, str], where: str) -> str:
    """`value` with every ${VAR} replaced from `env`; an unset variable is a ConfigError naming it."""
    def sub(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise ConfigError(f"{where} refers to ${{{name}}}, which is not set")
        return env[name]

    return _VAR.sub(sub, value)


def load_server_configs(path: str | Path, env: Mapping[str, str]) -> list[McpServerEntry]:
    """The enabled entries of the file, expanded; ConfigError (one line) when the file is unusable."""
    path = Path(path)
    entries = []
    for entry in _enabled(path):
        where = f"MCP_SERVERS_CONFIG {path.name}: server {entry.name}"
        headers = {k: expand(v, env, f"{where} header {k}") for k, v in entry.headers.items()}
        extra = {k: expand(v, env, f"{where} env {k}") for k, v in entry.env.items()}
        entries.append(entry.model_copy(update={"headers": headers, "env": extra}))
    return entries


def referenced_env_names(path: str | Path) -> list[str]:
    """The ${VAR} names the enabled entries' headers and env refer to (their values are secrets)."""
    values = (v for entry in _enabled(Path(path)) for v in (*entry.headers.values(), *entry.env.values()))
    return list(dict.fromkeys(m.group(1) for v in values for m in _VAR.finditer(v)))


def _enabled(path: Path) -> list[McpServerEntry]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        parsed = _File.model_validate(raw)
    except OSError as exc:
        raise ConfigError(f"MCP_SERVERS_CONFIG {path.name}: cannot read ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"MCP_SERVERS_CONFIG {path.name}: not JSON (line {exc.lineno}: {exc.msg})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"MCP_SERVERS_CONFIG {path.name}: {where}: {first['msg']}") from None
    return [entry for entry in parsed.servers if entry.enabled]
