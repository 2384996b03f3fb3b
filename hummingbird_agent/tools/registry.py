"""ToolRegistry: the explicit name -> tool map, the declarations and notes the model sees, and execute(),
which validates arguments, runs the handler and shapes any output into a ToolResult (auto-spill)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from hummingbird_agent import budgets
from hummingbird_agent.models.base import ToolDeclaration
from hummingbird_agent.tools.base import StreamingResponse, ToolDef, ToolResult
from hummingbird_agent.tools.spill import Spiller

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Entry:
    tool: ToolDef
    source: str | None
    metadata: Mapping[str, Any] = field(default_factory=dict)


class ToolRegistry:
    """Tools of one run. Data sources register their tools with notes and response metadata."""

    def __init__(self, spiller: Spiller, redact: Callable[[str], str] = str) -> None:
        self.spiller = spiller
        self._redact = redact
        self._tools: dict[str, _Entry] = {}
        self._source_notes: dict[str, str] = {}

    def register(self, tool: ToolDef) -> None:
        """Add a built-in (sandbox) tool."""
        self._add(_Entry(tool, None))

    def register_data_source(
        self,
        source: str,
        tools: Sequence[ToolDef],
        tool_notes: str = "",
        response_metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Add a data source: its tools, its domain notes for the system prompt, and metadata (e.g. UI base
        URLs) merged into every response of its tools. Handlers carry their clients via functools.partial."""
        self._source_notes[source] = tool_notes.strip()
        for tool in tools:
            self._add(_Entry(tool, source, dict(response_metadata or {})))

    def _add(self, entry: _Entry) -> None:
        name = entry.tool.name
        if name in self._tools:
            raise ValueError(f"tool {name!r} is registered twice")
        _check_schema(json.dumps(entry.tool.parameters, sort_keys=True))
        self._tools[name] = entry

    def declarations(self) -> list[ToolDeclaration]:
        return [entry.tool.declaration() for entry in self._tools.values()]

    def data_source_tools(self) -> list[str]:
        return [name for name, entry in self._tools.items() if entry.source is not None]

    def notes(self) -> str:
        """Tool notes for the system prompt: each source's notes, then each tool's own notes."""
        sections = [f"### {source}\n{notes}" for source, notes in self._source_notes.items() if notes]
        sections += [f"### {e.tool.name}\n{e.tool.notes.strip()}" for e in self._tools.values() if e.tool.notes]
        return "\n\n".join(sections)

    async def execute(self, name: str, args: Any) -> ToolResult:
        """Run one model call. Never raises: every failure is a ToolResult the model sees."""
        entry = self._tools.get(name)
        if entry is None:
            return ToolResult.error("unknown_tool", f"unknown tool {name!r}; available: {', '.join(self._tools)}")
        return await self.guard(name, self._execute(entry, args))

    async def _execute(self, entry: _Entry, args: Any) -> ToolResult:
        output = await self.call(entry.tool.name, args)
        if isinstance(output, ToolResult):
            return output.with_metadata(entry.metadata)
        if isinstance(output, StreamingResponse):
            result = await self.spiller.stream(entry.tool.name, output)
            return result.with_metadata({**entry.metadata, **output.metadata})
        return (await self.spiller.value(entry.tool.name, output)).with_metadata(entry.metadata)

    async def call(self, name: str, args: Any) -> Any:
        """Validate `args` and run the handler; a ToolResult error for bad arguments. Raises what the handler
        raises (callers run it under `guard`)."""
        entry = self._tools.get(name)
        if entry is None:
            return ToolResult.error("unknown_tool", f"unknown tool {name!r}")
        problem = argument_problem(entry.tool.parameters, args)
        if problem:
            return ToolResult.error("bad_arguments", f"{name}: {problem}")
        handler = entry.tool.handler
        if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(getattr(handler, "func", None)):
            return await handler(**args)
        return await asyncio.to_thread(handler, **args)

    def response_metadata(self, name: str) -> Mapping[str, Any]:
        entry = self._tools.get(name)
        return entry.metadata if entry else {}

    async def guard(self, name: str, work: Awaitable[ToolResult]) -> ToolResult:
        """Await a tool's work; an exception inside it becomes an error result (the tool-executor boundary)."""
        try:
            return await work
        except Exception as exc:  # noqa: BLE001 - tool-executor boundary: a failing tool must not end the run
            message = self._redact(f"{type(exc).__name__}: {exc}")[: budgets.TOOL_ERROR_MAX_CHARS]
            # One line at warning level (the CLI shows it); the traceback only for debugging.
            log.warning("tool failed tool=%s error=%s", name, message)
            log.debug("tool traceback tool=%s", name, exc_info=True)
            return ToolResult.error("tool_error", f"{name} failed: {message}")


@functools.lru_cache(maxsize=1024)
def _check_schema(schema_json: str) -> None:
    """Schemas are static: each distinct one is checked once per process, not once per run."""
    jsonschema.Draft202012Validator.check_schema(json.loads(schema_json))


def argument_problem(schema: Mapping[str, Any], args: Any) -> str | None:
    """One sentence naming the first way `args` breaks the tool's schema, or None when it fits."""
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {type(args).__name__}"
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(args))
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path)
    return f"invalid arguments{' at ' + where if where else ''}: {error.message}"[: budgets.TOOL_ERROR_MAX_CHARS]
