"""Runs INSIDE the sandbox (python3 -I -c <this file>), never imported by the service: executes one
generated async function body and relays each `tools.<name>(...)` call to the host as a JSON line.

stdin line 1: {"code", "task"}; then one {"id", "ok", "result"|"error"} line per call. stdout: call
requests {"op": "call", "id", "tool", "args"} and one final {"op": "done", ...}. The code's own prints go
to stderr, so it cannot mix text into the protocol stream by accident (the host trusts no line anyway).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import threading
from collections.abc import Awaitable, Callable
from typing import Any

Message = dict[str, Any]
Send = Callable[[Message], None]
Pending = dict[int, "asyncio.Future[Message]"]


class ToolRefused(Exception):
    """The host refused or could not run a tool call."""


class Tools:
    """`tools.<name>(**kwargs)`: every attribute is a remote call; the host decides what may run."""

    def __init__(self, send: Send, pending: Pending, loop: asyncio.AbstractEventLoop) -> None:
        self._send, self._pending, self._loop, self._next = send, pending, loop, 0

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name.startswith("_"):
            raise AttributeError(name)

        async def call(**kwargs: Any) -> Any:
            self._next += 1
            future = self._loop.create_future()
            self._pending[self._next] = future
            self._send({"op": "call", "id": self._next, "tool": name, "args": kwargs})
            answer = await future
            if answer.get("refused"):
                raise ToolRefused(answer.get("error", "refused"))
            return answer.get("result")

        return call


def _reader(loop: asyncio.AbstractEventLoop, pending: Pending) -> None:
    for line in sys.stdin:
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        future = pending.pop(answer.get("id"), None)
        if future is not None:
            loop.call_soon_threadsafe(future.set_result, answer)


async def _run(code: str, task: Any, send: Send) -> Message:
    loop = asyncio.get_running_loop()
    pending: Pending = {}
    threading.Thread(target=_reader, args=(loop, pending), daemon=True).start()
    source = "async def _fn(tools, asyncio, task):\n" + textwrap.indent(code or "return {}", "    ")
    try:
        namespace: dict[str, Any] = {}
        exec(compile(source, "<orchestration>", "exec"), namespace)  # noqa: S102 - the sandbox is the boundary
    except SyntaxError as exc:
        return {"op": "done", "ok": False, "error": f"SyntaxError: {exc.msg} (line {(exc.lineno or 1) - 1})"}
    try:
        value = await namespace["_fn"](Tools(send, pending, loop), asyncio, task)
    except Exception as exc:  # noqa: BLE001 - reported to the host as the run's error
        return {"op": "done", "ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
    return {"op": "done", "ok": True, "value": value}


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    lock = threading.Lock()

    def send(message: Message) -> None:
        text = json.dumps(message, default=str)
        with lock:
            protocol.write(text + "\n")
            protocol.flush()

    first = json.loads(sys.stdin.readline())
    send(asyncio.run(_run(first.get("code", ""), first.get("task", {}), send)))


if __name__ == "__main__":
    main()
