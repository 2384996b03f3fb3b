"""Runs generated orchestration code in the network-less sandbox; each `tools.<name>(...)` call comes back
to the host as a JSON line, is checked against the allowed set at that moment, runs here, and its capped
result goes back on the command's stdin. No credential ever enters the sandbox: only code, task facts
and tool results do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.mcp import McpClient
from hummingbird_agent.errors import AgentError, SandboxError
from hummingbird_agent.sandbox import Duplex, duplex_exec
from hummingbird_agent.sandbox.base import Sandbox

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One requested tool call: what was asked, whether it ran and succeeded, and why not."""

    tool: str
    args: Mapping[str, Any]
    ok: bool
    detail: str = ""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """The code's returned dict ({} on any failure), the calls it made and the results that came back."""

    value: dict[str, Any]
    calls: tuple[CallRecord, ...] = ()
    results: tuple[tuple[str, Any], ...] = ()
    error: str = ""


@dataclass(slots=True)
class ToolGate:
    """The host side of `tools.<name>`: refuses names outside `allowed()` (asked at every call, so an
    alias or a computed name in the sandbox gains nothing), caps calls and result bytes, runs the rest."""

    client: McpClient
    allowed: Callable[[], Collection[str]]
    max_calls: int = budgets.EXPLORE_MAX_TOOL_CALLS
    result_max_bytes: int = budgets.EXPLORE_RESULT_MAX_BYTES
    total_max_bytes: int = budgets.EXPLORE_TOTAL_RESULT_MAX_BYTES
    calls: list[CallRecord] = field(default_factory=list)
    results: list[tuple[str, Any]] = field(default_factory=list)
    _bytes: int = 0

    async def handle(self, tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """The answer sent into the sandbox: {"result"} (None when the tool failed) or {"refused", "error"}."""
        reason = self._refusal(tool)
        if reason:
            log.warning("orchestration refused tool=%s reason=%s", tool[:80], reason)
            self.calls.append(CallRecord(tool[:80], args, False, reason))
            return {"refused": True, "error": f"{tool[:80]}: {reason}"}
        try:
            result = await self.client.call(tool, args)
        except AgentError as exc:  # ToolCallError, or a data source's typed error
            # Seed: an individual tool failure is logged and its result skipped; the code goes on.
            log.warning("orchestration tool failed tool=%s error=%s", tool, str(exc)[:300])
            self.calls.append(CallRecord(tool, args, False, str(exc)[:300]))
            return {"result": None}
        result, size = self._capped(result)
        self._bytes += size
        self.calls.append(CallRecord(tool, args, True))
        self.results.append((tool, result))
        return {"result": result}

    def _refusal(self, tool: str) -> str:
        if tool not in self.allowed():
            return "not an allowed (read-only) tool"
        if len(self.calls) >= self.max_calls:
            return f"call budget of {self.max_calls} exhausted"
        if self._bytes >= self.total_max_bytes:
            return f"result budget of {self.total_max_bytes} bytes exhausted"
        return ""

    def _capped(self, result: Any) -> tuple[Any, int]:
        text = json.dumps(result, default=str)
        if len(text) <= self.result_max_bytes:
            return result, len(text)
        preview = (result if isinstance(result, str) else text)[: self.result_max_bytes]
        return {"truncated": True, "preview": preview}, self.result_max_bytes


def runner_command() -> str:
    runner = resources.files("hummingbird_agent.bamboo.explore").joinpath("sandbox_runner.py")
    source = runner.read_text(encoding="utf-8")
    return "python3 -I -c " + shlex.quote(source)


async def run_orchestration(box: Sandbox, code: str, task: Mapping[str, Any], gate: ToolGate,
                            timeout_s: float = budgets.EXPLORE_CODE_TIMEOUT_S) -> RunOutcome:
    """Run `code` (an async function body over `tools`, `asyncio`, `task`) and return its dict. Fail-open:
    a syntax error, an exception, a timeout, a non-dict value or a sandbox failure gives {} and a warning."""
    first = len(gate.calls), len(gate.results)
    try:
        async with asyncio.timeout(timeout_s), duplex_exec(box, runner_command(), timeout_s) as duplex:
            await duplex.send(json.dumps({"code": code, "task": dict(task)}, default=str).encode() + b"\n")
            done = await _serve(duplex, gate)
            await duplex.finish()
    except TimeoutError:
        done = {"ok": False, "error": f"timed out after {timeout_s:.0f} s"}
    except SandboxError as exc:
        done = {"ok": False, "error": f"sandbox: {exc}"}
    value, error = done.get("value"), "" if done.get("ok") else str(done.get("error") or "no result")[:500]
    if not error and not isinstance(value, dict):
        error = f"the code returned {type(value).__name__}, not a dict"
    if error:
        log.warning("orchestration code failed; no results this round: %s", error)
    result = value if not error and isinstance(value, dict) else {}
    return RunOutcome(result, tuple(gate.calls[first[0]:]), tuple(gate.results[first[1]:]), error)


async def _serve(duplex: Duplex, gate: ToolGate) -> dict[str, Any]:
    """Answer call requests until the code reports done (or stdout ends); calls run concurrently."""
    lock = asyncio.Lock()
    tasks: set[asyncio.Task[None]] = set()

    async def answer(call_id: Any, tool: str, args: Mapping[str, Any]) -> None:
        reply = await gate.handle(tool, args)
        line = json.dumps({"id": call_id, **reply}, default=str).encode() + b"\n"
        async with lock:
            await duplex.send(line)

    try:
        while line := await duplex.readline():
            message = _message(line)
            if message.get("op") == "done":
                return message
            if message.get("op") == "call":
                task = asyncio.create_task(answer(message.get("id"), message["tool"], message["args"]))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        return {"ok": False, "error": "the code ended without a result"}
    finally:
        for task in tasks:
            task.cancel()


def _message(line: bytes) -> dict[str, Any]:
    """A protocol line from the sandbox, validated (untrusted); anything malformed is ignored."""
    try:
        message = json.loads(line)
    except ValueError:
        return {}
    if not isinstance(message, dict):
        return {}
    if message.get("op") == "call" and not (isinstance(message.get("tool"), str)
                                            and isinstance(message.get("args"), dict)):
        return {}
    return message
