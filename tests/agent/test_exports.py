"""The public names of the engine's packages (other packages import only these)."""

from __future__ import annotations

import hummingbird_agent.agent as agent
import hummingbird_agent.models as models
import hummingbird_agent.sessions as sessions
import hummingbird_agent.tools as tools


def test_exported_names() -> None:
    assert set(models.__all__) == {
        "Content", "GeminiModel", "Model", "ModelRequest", "ModelResponse", "ScriptedModel", "ScriptedTurn",
        "ToolCall", "ToolDeclaration", "Usage", "build_model", "read_model_turn", "tool_message", "user_text",
        "wire_body", "wire_size_bytes",
    }
    assert set(tools.__all__) == {
        "OUT_DIR", "Handler", "Spiller", "StreamingResponse", "ToolDef", "ToolRegistry", "ToolResult",
        "argument_problem", "register_sandbox_tools", "sandbox_tools",
    }
    assert {"LocalSessionStore", "SessionStore", "StoredSession", "validate_session_id"} <= set(sessions.__all__)
    assert {"AgentLoop", "RunDeps", "RunRequest", "run_workflow"} <= set(agent.__all__)
    for module in (agent, models, sessions, tools):
        assert all(hasattr(module, name) for name in module.__all__)
