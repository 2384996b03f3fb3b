"""MCP client layer of the explorer: builtin tools, external servers (HTTP, stdio), their composite."""

from hummingbird_agent.bamboo.mcp.base import BUILTIN, McpClient, McpTool, ToolCallError
from hummingbird_agent.bamboo.mcp.builtin import BuiltinMcpClient
from hummingbird_agent.bamboo.mcp.composite import CompositeMcpClient
from hummingbird_agent.bamboo.mcp.external import INSTALL_HINT, ExternalMcpClient, StdioMcpClient, ToolFilters
from hummingbird_agent.bamboo.mcp.server_config import build_mcp_client, client_for, config_namespace

__all__ = [
    "BUILTIN",
    "INSTALL_HINT",
    "BuiltinMcpClient",
    "CompositeMcpClient",
    "ExternalMcpClient",
    "McpClient",
    "McpTool",
    "StdioMcpClient",
    "ToolCallError",
    "ToolFilters",
    "build_mcp_client",
    "client_for",
    "config_namespace",
]
