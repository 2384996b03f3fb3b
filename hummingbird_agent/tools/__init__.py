"""Tools the model can call: ToolDef, ToolRegistry (declarations, notes, execute), StreamingResponse,
auto-spill into the sandbox, and the sandbox tools."""

from hummingbird_agent.tools.base import Handler, StreamingResponse, ToolDef, ToolResult
from hummingbird_agent.tools.registry import ToolRegistry, argument_problem
from hummingbird_agent.tools.sandbox_tools import register_sandbox_tools, sandbox_tools
from hummingbird_agent.tools.spill import OUT_DIR, Spiller

__all__ = [
    "OUT_DIR",
    "Handler",
    "Spiller",
    "StreamingResponse",
    "ToolDef",
    "ToolRegistry",
    "ToolResult",
    "argument_problem",
    "register_sandbox_tools",
    "sandbox_tools",
]
