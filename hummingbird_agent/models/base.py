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
    """Token counts of one model call, the same meaning on every provider.

    `prompt_tokens` is the whole prompt (Anthropic: input + cache read + cache creation), `candidate_tokens`
    the output, `cached_tokens` the part of the prompt read from the provider's cache, `cache_write_tokens`
    the part written to it (Anthropic only; the others cache implicitly).
    """

    prompt_tokens: int = 0
    candidate_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    def counts(self) -> tuple[int, int, int]:
        """(input, output, cached) tokens, the order footers and metrics print them in."""
        return self.prompt_tokens, self.candidate_tokens, self.cached_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.candidate_tokens + other.candidate_tokens,
            self.cached_tokens + other.cached_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def input_tokens(self) -> int:
        return self.prompt_tokens

    @property
    def output_tokens(self) -> int:
        return self.candidate_tokens


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call sends. `tools_enabled=False` forbids function calls (the final turn).

    `system_suffix` is this call's warning: sent after `system` and outside any cached prefix. `json_output`
    asks for one JSON object (JSON mode); `response_schema` (a JSON schema) constrains it further where the
    provider supports it.
    """

    model: str
    system: str
    contents: Sequence[Content]
    tools: Sequence[ToolDeclaration] = ()
    tools_enabled: bool = True
    system_suffix: str = ""
    json_output: bool = False
    response_schema: Mapping[str, Any] | None = None
    temperature: float | None = None
    """None keeps the provider's default."""
    max_output_tokens: int | None = None
    """This call's output cap (tokens); None keeps the adapter's default."""

    @property
    def full_system(self) -> str:
        """The system text as one string (providers without separate system blocks)."""
        return f"{self.system}\n\n{self.system_suffix}" if self.system_suffix else self.system


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One model turn. `content` is the canonical model message, None when the model returned nothing."""

    content: Content | None
    calls: tuple[ToolCall, ...] = ()
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    provider: str = ""
    """Which adapter answered (`gemini`, `anthropic`, `openai`, `scripted`), for footers and metrics."""
    model: str = ""
    """The model name the provider reported (or the requested one)."""
    finish_reason: str = ""
    """Why the answer ended, in one vocabulary: stop, tool_calls, max_tokens, safety, repetition (stopped here as
    a runaway), or the provider's own word in lower case; "" when it sent none."""

    @property
    def empty(self) -> bool:
        return not self.calls and not self.text.strip()


class Model(Protocol):
    """An LLM. Raises TransientError when it stays unavailable, PermanentError when the request is refused."""

    async def generate(self, request: ModelRequest) -> ModelResponse: ...

    async def aclose(self) -> None: ...
