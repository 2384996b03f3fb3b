"""The sandbox tools: sandbox_exec runs a command in the sandbox; fetch_to_sandbox and
fetch_batch_to_sandbox run data-source tools on the host and stream their output into sandbox files."""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.sandbox.base import WORKDIR
from hummingbird_agent.tools.base import StreamingResponse, ToolDef, ToolResult
from hummingbird_agent.tools.preview import text_preview
from hummingbird_agent.tools.registry import ToolRegistry
from hummingbird_agent.tools.spill import Capture, aiter_chunks, resolve_sandbox_path

_FETCH_ITEM = {
    "type": "object",
    "properties": {
        "tool": {"type": "string", "description": "name of a data-source tool"},
        "args": {"type": "object", "description": "that tool's arguments"},
        "path": {"type": "string", "description": f"destination file, relative to {WORKDIR}"},
    },
    "required": ["tool", "args", "path"],
    "additionalProperties": False,
}


async def sandbox_exec(registry: ToolRegistry, command: str, timeout_s: float | None = None) -> ToolResult:
    """Run `command` with sh in the sandbox; each of stdout/stderr is spilled on its own when large."""
    spiller = registry.spiller
    limit = min(timeout_s or budgets.SANDBOX_EXEC_TIMEOUT_S, budgets.TOOL_EXEC_MAX_TIMEOUT_S)
    result = await spiller.sandbox.exec(command, timeout_s=limit)
    content: dict[str, Any] = {
        "exit_code": result.exit_code,
        "stdout": await spiller.exec_output("sandbox_exec", "stdout", result.stdout),
        "stderr": await spiller.exec_output("sandbox_exec", "stderr", result.stderr),
    }
    if result.timed_out:
        content["timed_out"] = f"killed after {limit:g} s"
    truncated = result.stdout_truncated or result.stderr_truncated
    if truncated:
        content["note"] = "output beyond the capture cap was dropped; redirect large output to a file"
    return ToolResult(ok=True, content=content, truncated=truncated)


async def fetch_to_sandbox(registry: ToolRegistry, tool: str, args: dict[str, Any], path: str) -> ToolResult:
    """Run data-source `tool` on the host and stream its whole output into `path` in the sandbox."""
    return await _fetch(registry, tool, args, path, budgets.SPILL_PREVIEW_HEAD_BYTES)


async def fetch_batch_to_sandbox(registry: ToolRegistry, requests: list[dict[str, Any]]) -> dict[str, Any]:
    """Many fetches in one call, a few at a time; one failed item does not stop the others."""
    gate = asyncio.Semaphore(budgets.FETCH_BATCH_CONCURRENCY)

    async def one(item: dict[str, Any]) -> dict[str, Any]:
        async with gate:
            work = _fetch(registry, item["tool"], item["args"], item["path"], budgets.FETCH_BATCH_PREVIEW_BYTES)
            result = await registry.guard(item["tool"], work)
        return {"path": item["path"], **result.to_response()}

    results = await asyncio.gather(*(one(item) for item in requests))
    failed = sum(1 for r in results if "error" in r)
    return {"fetched": len(results) - failed, "failed": failed, "results": results}


async def _fetch(registry: ToolRegistry, tool: str, args: dict[str, Any], path: str, preview: int) -> ToolResult:
    if tool not in registry.data_source_tools():
        known = ", ".join(registry.data_source_tools()) or "none configured"
        return ToolResult.error("bad_arguments", f"{tool!r} is not a data-source tool (available: {known})")
    try:
        target = resolve_sandbox_path(path)
    except ValueError as exc:
        return ToolResult.error("bad_arguments", str(exc))
    output = await registry.call(tool, args)
    if isinstance(output, ToolResult):
        return output
    stream = output if isinstance(output, StreamingResponse) else _buffered(output)
    capture = await registry.spiller.write(target, aiter_chunks(stream.chunks))
    content = _fetch_summary(target, capture, stream.binary, preview)
    return ToolResult(ok=True, content=content).with_metadata({**registry.response_metadata(tool), **stream.metadata})


def _buffered(output: Any) -> StreamingResponse:
    if isinstance(output, str):
        return StreamingResponse([output.encode()])
    return StreamingResponse([json.dumps(output, ensure_ascii=False).encode()], suffix=".json")


def _fetch_summary(path: str, capture: Capture, binary: bool, preview_bytes: int) -> dict[str, Any]:
    content: dict[str, Any] = {"path": path, "size_bytes": capture.size, "lines": capture.lines}
    if not binary:
        head = bytes(capture.head[:preview_bytes])
        content["preview"] = text_preview(head, bytes(capture.tail[-preview_bytes:]), capture.size)
    return content


def sandbox_tools(registry: ToolRegistry) -> list[ToolDef]:
    """The three sandbox tools, bound to `registry` (its spiller's sandbox and its data-source tools)."""
    return [
        ToolDef(
            "sandbox_exec",
            f"Run a shell command (sh -c) in the sandbox, working directory {WORKDIR}. No network. "
            "Each command starts from a clean process table: processes a command leaves running are killed "
            "before the next command starts and soon after it returns (with parallel commands, once the last "
            f"returns), so use background work within one command; files under {WORKDIR} persist. "
            "No new namespaces (unshare fails). "
            "Returns exit_code, stdout and stderr; large streams are saved to files and previewed.",
            {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "minLength": 1},
                    "timeout_s": {"type": "number", "exclusiveMinimum": 0,
                                  "maximum": budgets.TOOL_EXEC_MAX_TIMEOUT_S},
                },
                "required": ["command"],
                "additionalProperties": False,
            },
            functools.partial(sandbox_exec, registry),
            read_only=True,
        ),
        ToolDef(
            "fetch_to_sandbox",
            "Call a data-source tool on the host and write its full response to a file in the sandbox. "
            "Returns the path, size, a short preview and the source's metadata.",
            _FETCH_ITEM,
            functools.partial(fetch_to_sandbox, registry),
        ),
        ToolDef(
            "fetch_batch_to_sandbox",
            "Like fetch_to_sandbox for many requests in one call (e.g. every failed job log).",
            {
                "type": "object",
                "properties": {"requests": {"type": "array", "items": _FETCH_ITEM, "minItems": 1,
                                            "maxItems": budgets.FETCH_BATCH_MAX_REQUESTS}},
                "required": ["requests"],
                "additionalProperties": False,
            },
            functools.partial(fetch_batch_to_sandbox, registry),
        ),
    ]  # fmt: skip


def register_sandbox_tools(registry: ToolRegistry) -> None:
    for tool in sandbox_tools(registry):
        registry.register(tool)
