"""LLM adapters behind one Model protocol, and the canonical contents they exchange with the loop."""

from hummingbird_agent.models.base import (
    Content,
    Model,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolDeclaration,
    Usage,
)
from hummingbird_agent.models.contents import read_model_turn, tool_message, user_text, wire_body, wire_size_bytes
from hummingbird_agent.models.factory import build_model
from hummingbird_agent.models.gemini import GeminiModel
from hummingbird_agent.models.scripted import ScriptedModel, ScriptedTurn

__all__ = [
    "Content",
    "GeminiModel",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ScriptedModel",
    "ScriptedTurn",
    "ToolCall",
    "ToolDeclaration",
    "Usage",
    "build_model",
    "read_model_turn",
    "tool_message",
    "user_text",
    "wire_body",
    "wire_size_bytes",
]
