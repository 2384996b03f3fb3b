"""The Model interface every LLM adapter implements, and the typed request/response that cross it.

Contents are canonical Gemini-style dicts (`role` user/model/tool, `parts`); adapters convert them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Content = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model asked for. `args` is untrusted: the registry validates it."""

    name: str
    args: Any
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolDeclaration:
    """A provider-neutral function declaration: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one model call as the provider reported them."""

    prompt_tokens: int = 0
    candidate_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.candidate_tokens + other.candidate_tokens,
            self.cached_tokens + other.cached_tokens,
        )


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call sends. `tools_enabled=False` forbids function calls (the final turn)."""

    model: str
    system: str
    contents: Sequence[Content]
    tools: Sequence[ToolDeclaration] = ()
    tools_enabled: bool = True
    response_schema: Mapping[str, Any] | None = None
    """JSON Schema of the answer: the provider's structured output (JSON mode) when it has one."""
    temperature: float | None = None
    """None keeps the provider's default."""


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One model turn. `content` is the canonical model message, None when the model returned nothing."""

    content: Content | None
    calls: tuple[ToolCall, ...] = ()
    text: str = ""
    usage: Usage = field(default_factory=Usage)

    @property
    def empty(self) -> bool:
        return not self.calls and not self.text.strip()


class Model(Protocol):
    """An LLM. Raises TransientError when it stays unavailable, PermanentError when the request is refused."""

    async def generate(self, request: ModelRequest) -> ModelResponse: ...

    async def aclose(self) -> None: ...
