"""Tool types: one ToolDef per tool, the ToolResult every call returns, and StreamingResponse for
data-source output too large to buffer."""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hummingbird_agent.models.base import ToolDeclaration

# A handler takes the validated arguments as keywords. It may be sync (run in a thread) or async, and
# returns a str / JSON-able dict or list (buffered), a StreamingResponse, or a finished ToolResult.
Handler = Callable[..., Any] | Callable[..., Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ToolDef:
    """A tool in one declaration: what the model sees (name, description, parameters schema, notes)
    and what runs (handler). `read_only` tools cannot change anything outside the sandbox."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Handler
    notes: str = ""
    read_only: bool = True

    def declaration(self) -> ToolDeclaration:
        return ToolDeclaration(self.name, self.description, self.parameters)


@dataclass(frozen=True, slots=True)
class StreamingResponse:
    """A data-source response streamed straight into a sandbox file, never held whole in memory.

    `suffix` names the spill file's extension (.log, .jsonl, .tar.gz); `binary` skips the text preview.
    The producer may fill `metadata` while it is iterated; it is read only after the stream is exhausted.
    `preview`, when given, is called (in a thread) once a spilled stream is exhausted; its text replaces the
    head-and-tail preview (cut to the preview budget), and None or "" keeps head and tail.
    """

    chunks: Iterable[bytes] | AsyncIterable[bytes]
    suffix: str = ".txt"
    binary: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    preview: Callable[[], str | None] | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """Outcome of one tool call. Failures are data (`ok=False`, `error_kind`, a sentence for the model)."""

    ok: bool
    content: str | Mapping[str, Any] | list[Any]
    error_kind: str | None = None
    truncated: bool = False
    spilled_path: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def error(cls, kind: str, message: str) -> ToolResult:
        return cls(ok=False, content=message, error_kind=kind)

    def with_metadata(self, extra: Mapping[str, Any]) -> ToolResult:
        if not extra:
            return self
        return ToolResult(
            self.ok, self.content, self.error_kind, self.truncated, self.spilled_path, {**extra, **self.metadata}
        )

    def to_response(self) -> dict[str, Any]:
        """The functionResponse `response` object the model receives."""
        if not self.ok:
            response: dict[str, Any] = {"error": self.content, "error_kind": self.error_kind}
        else:
            response = {"result": self.content}
        if self.truncated:
            response["truncated"] = True
        if self.metadata:
            response["metadata"] = dict(self.metadata)
        return response
