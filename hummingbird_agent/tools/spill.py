"""Auto-spill: tool output over SPILL_THRESHOLD_BYTES is streamed into the sandbox's `_out/` folder and
replaced by its path, size and a bounded preview. Streams never sit whole in host memory."""

from __future__ import annotations

import asyncio
import json
import posixpath
import shlex
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.errors import SandboxError
from hummingbird_agent.sandbox.base import WORKDIR, Sandbox
from hummingbird_agent.tools.base import StreamingResponse, ToolResult
from hummingbird_agent.tools.preview import cap_preview, shape_preview, spill_summary, text_preview

OUT_DIR = f"{WORKDIR}/_out"


@dataclass(slots=True)
class Capture:
    """Running size, line count, head and tail of a byte stream (for the preview)."""

    size: int = 0
    lines: int = 0
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        self.lines += chunk.count(b"\n")
        room = budgets.SPILL_PREVIEW_HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
        self.tail += chunk[-budgets.SPILL_PREVIEW_TAIL_BYTES :]
        del self.tail[: -budgets.SPILL_PREVIEW_TAIL_BYTES]

    def summary(self, path: str, binary: bool) -> dict[str, Any]:
        preview = None if binary else text_preview(bytes(self.head), bytes(self.tail), self.size)
        return spill_summary(path, self.size, self.lines, preview, "binary" if binary else "text")


async def aiter_chunks(chunks: Iterable[bytes] | AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """Chunks as an async stream; a sync iterator (requests, python-gitlab) is advanced in a thread."""
    if isinstance(chunks, AsyncIterable):
        async for chunk in chunks:
            yield chunk
        return
    iterator = iter(chunks)
    while (item := await asyncio.to_thread(_next_chunk, iterator)) is not None:
        yield item


def _next_chunk(iterator: Iterator[bytes]) -> bytes | None:
    return next(iterator, None)


def resolve_sandbox_path(path: str) -> str:
    """An absolute path inside WORKDIR for a model-given path; ValueError when it points elsewhere."""
    full = posixpath.normpath(posixpath.join(WORKDIR, path))
    if full == WORKDIR or not full.startswith(WORKDIR + "/"):
        raise ValueError(f"path {path!r} must name a file inside {WORKDIR}")
    return full


class Spiller:
    """Writes outputs into one sandbox; numbers the spill files per run."""

    def __init__(self, sandbox: Sandbox, threshold_bytes: int = budgets.SPILL_THRESHOLD_BYTES) -> None:
        self.sandbox = sandbox
        self.threshold_bytes = threshold_bytes
        self._count = 0

    def out_path(self, tool: str, suffix: str) -> str:
        self._count += 1
        return f"{OUT_DIR}/{tool}-{self._count}{suffix}"

    async def write(self, path: str, chunks: AsyncIterable[bytes]) -> Capture:
        """Stream `chunks` into `path` (parents created) and return what passed through."""
        capture = Capture()

        async def counted() -> AsyncIterator[bytes]:
            async for chunk in chunks:
                capture.add(chunk)
                yield chunk

        command = f"mkdir -p {shlex.quote(posixpath.dirname(path))} && cat > {shlex.quote(path)}"
        result = await self.sandbox.stream_exec(command, counted())
        if not result.ok:
            detail = result.stderr.decode(errors="replace").strip()[:200]
            raise SandboxError(f"writing {path} in the sandbox failed (exit {result.exit_code}): {detail}")
        return capture

    async def value(self, tool: str, value: Any) -> ToolResult:
        """A buffered output: inline when small, else spilled (.json with its shape, or .txt)."""
        is_text = isinstance(value, str)
        data = value.encode() if is_text else json.dumps(value, ensure_ascii=False).encode()
        if len(data) <= self.threshold_bytes:
            return ToolResult(ok=True, content=value)
        path = self.out_path(tool, ".txt" if is_text else ".json")
        capture = await self.write(path, _one(data))
        summary = capture.summary(path, binary=False)
        if not is_text:
            summary["format"] = "json"
            summary["preview"] = shape_preview(value)
        return ToolResult(ok=True, content=summary, spilled_path=path)

    async def stream(self, tool: str, response: StreamingResponse) -> ToolResult:
        """A streamed output: inline if it ends under the threshold (text only), else spilled."""
        chunks = aiter_chunks(response.chunks)
        buffered = bytearray()
        async for chunk in chunks:
            buffered += chunk
            if len(buffered) > self.threshold_bytes:
                break
        else:
            if not response.binary:
                return ToolResult(ok=True, content=buffered.decode("utf-8", errors="replace"))
        path = self.out_path(tool, response.suffix)
        capture = await self.write(path, _prefixed(bytes(buffered), chunks))
        summary = capture.summary(path, response.binary)
        if response.preview is not None and not response.binary:
            own = await asyncio.to_thread(response.preview)
            if own:
                summary["preview"] = cap_preview(own)
        return ToolResult(ok=True, content=summary, spilled_path=path)

    async def exec_output(self, tool: str, stream: str, data: bytes) -> str | dict[str, Any]:
        """One stream of a sandbox command: the text when small, else a spill summary."""
        if len(data) <= self.threshold_bytes:
            return data.decode("utf-8", errors="replace")
        path = self.out_path(tool, f".{stream}.txt")
        return (await self.write(path, _one(data))).summary(path, binary=False)


async def _one(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), budgets.STREAM_CHUNK_BYTES):
        yield data[start : start + budgets.STREAM_CHUNK_BYTES]


async def _prefixed(prefix: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    if prefix:
        yield prefix
    async for chunk in rest:
        yield chunk
